//! Protocol v1, the daemon and the client (being written).
