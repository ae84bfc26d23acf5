//! Configuration: flags, then `TOOLSUM_*` environment, then an optional TOML file (being written).
