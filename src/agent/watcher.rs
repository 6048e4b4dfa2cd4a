//! TODO(agent helper)
