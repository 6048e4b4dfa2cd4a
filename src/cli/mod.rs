//! TODO(cli)
