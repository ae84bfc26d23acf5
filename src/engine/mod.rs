//! The inference engine (being written).
