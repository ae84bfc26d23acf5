//! Model manifest, fetch, resolution (being written).
