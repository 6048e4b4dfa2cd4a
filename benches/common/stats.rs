//! Summaries of timing samples shared by the benches that print their own tables.
//!
//! Owns: percentiles. Does not own: taking the samples.
#![allow(dead_code)]

/// p50 and p95 (nearest rank) of `samples`, which it sorts; `samples` must not be
/// empty.
pub fn percentiles(samples: &mut [f64]) -> (f64, f64) {
    samples.sort_by(f64::total_cmp);
    let at = |p: f64| {
        let rank = (p * samples.len() as f64).ceil() as usize;
        samples[rank.clamp(1, samples.len()) - 1]
    };
    (at(0.50), at(0.95))
}
