//! Configuration: arbor's own config file, bundles, the mount plan and overlay merge.
//!
//! Owns: `config.yaml` (`ArborConfig`), bundle loading (`bundle`), the dynamic mount
//! plan with typed accessors (`mount_plan`), and `merge(parent, overlay)` with spawn
//! tool policy and `agents` access control (`merge`). Does not own: agent files
//! (`agent`) or provider credentials (`routing::setup`).

pub mod arbor_config;
pub mod bundle;
pub mod merge;
pub mod mount_plan;
pub mod yaml;

pub use arbor_config::ArborConfig;
pub use bundle::Bundle;
pub use mount_plan::{ModuleEntry, MountPlan};
