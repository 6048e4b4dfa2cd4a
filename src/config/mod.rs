//! Configuration: arbor's own config file, the mount plan and overlay merge.
//!
//! Owns: `config.yaml` (`ArborConfig`), the dynamic mount plan with typed accessors
//! and module-entry shapes (`mount_plan`), `merge(parent, overlay)` with spawn tool
//! policy and `agents` access control (`merge`), the retry limits (`retry`), the
//! limits on one model response (`response`), the tables of built-in tool and provider
//! modules (`modules`), approval rules and the policy that
//! decides each tool call (`approvals`), the project trust store (`trust`), the paths
//! no mention may read (`private`), the one reader of
//! project files — confined, non-blocking, capped (`project_file`), MCP server configuration (`mcp`), the kernel
//! sandbox's settings (`sandbox`), whether writing sub-sessions get a git worktree
//! (`isolation`), which sub-sessions run on `arbor worker`s (`remote`, issue 27), the
//! context limit and compaction settings (`context`), delegation
//! limits — the task tool's, which agent files may only tighten, and the config's
//! tree-wide ones (`limits`) — and the YAML reader (`yaml`). Sits below `agent` (agent
//! files and bundles are read into mount plans with it) and uses only `paths` and
//! `session`'s protocol types below it: merge works on plain JSON overlays. Does not
//! own: agent
//! files or bundles (`agent`), the price table or provider credentials (`routing`).
//! Also here: frontmatter splitting and parsing (`frontmatter`) and the listing of an
//! agents directory with its power test (`agent_files`), shared by trust and the
//! registry.

pub mod acp_agent;
pub mod agent_files;
pub mod approvals;
pub mod arbor_config;
pub mod budget;
pub mod context;
pub mod endpoint;
pub mod frontmatter;
pub mod isolation;
pub mod limits;
pub mod mcp;
pub mod merge;
pub mod modules;
pub mod mount_plan;
pub mod private;
pub mod project_file;
pub mod remote;
pub mod response;
pub mod retry;
pub mod sandbox;
pub mod trust;
pub mod yaml;

pub use arbor_config::{ArborConfig, Notify};
pub use limits::{Limits, TaskConfig};
pub use mount_plan::{ModuleEntry, MountPlan};
