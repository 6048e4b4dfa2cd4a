//! TODO(engine helper)
