//! With nothing configured (issue 15 items 6–7): the no-provider banner fits 80×24 and
//! 40 columns with its suggested config whole; a local server in use is a status-bar
//! notice, never a modal.

use std::path::Path;

use arbor::routing::local::{SUGGESTED_CONFIG, no_provider_banner};

use super::*;

#[test]
fn the_no_provider_banner_shows_its_whole_suggested_config_at_80_and_40_columns() {
    let text = no_provider_banner(Path::new("/home/me/.config/arbor/config.yaml"));
    let mut h = harness_with(Err(text), None);
    for (w, name) in [(80, "no_provider_banner_80"), (40, "no_provider_banner_40")] {
        let screen = h.screen(w, 24);
        insta::assert_snapshot!(name, screen);
        for line in SUGGESTED_CONFIG.lines() {
            assert!(
                screen.lines().any(|l| l.contains(&format!("│{line}"))),
                "{line:?} at {w} columns:\n{screen}"
            );
        }
        assert!(screen.contains("Details: arbor doctor"), "{screen}");
        assert!(!screen.contains("│…"), "nothing cut:\n{screen}");
    }
}

#[test]
fn the_local_server_in_use_is_a_notice() {
    let mut h = harness_with(Ok("llamacpp".into()), None);
    h.app
        .notice("using llama.cpp at 127.0.0.1:8080 (found locally)");
    let screen = h.screen(80, 24);
    insta::assert_snapshot!("local_server_notice_80", screen);
    assert!(
        screen.contains("using llama.cpp at 127.0.0.1:8080"),
        "{screen}"
    );
    assert_eq!(h.app.overlay(), Overlay::None);
    assert_eq!(h.app.focus(), Focus::Composer);
}
