//! TODO(provider helper)
