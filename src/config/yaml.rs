//! The one way arbor reads YAML: YAML 1.2 scalars via `serde_saphyr`.
//!
//! `strict_booleans` makes only `true`/`false` booleans, so `n`, `no`, `off`, `on`,
//! `y` and `yes` stay strings, as YAML 1.2 (and PyYAML for `y`/`n`) reads them. Agent
//! files, bundles, the config file, routing matrices and themes all go through here.

use serde::de::DeserializeOwned;

/// Parses `text` as YAML 1.2 into `T`.
///
/// Errors carry serde-saphyr's location (line and column within `text`).
pub fn from_str<T: DeserializeOwned>(text: &str) -> Result<T, serde_saphyr::Error> {
    serde_saphyr::from_str_with_options(text, serde_saphyr::options! { strict_booleans: true })
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    #[test]
    fn only_true_and_false_are_booleans() {
        let v: Value = super::from_str("a: off\nb: n\nc: yes\nd: true\ne: False\n").unwrap();
        assert_eq!(
            v,
            json!({"a": "off", "b": "n", "c": "yes", "d": true, "e": false})
        );
    }
}
