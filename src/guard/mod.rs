//! The guard pipeline (owned by the pipeline helper; see module docs once written).
