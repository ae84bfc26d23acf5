//! What names or describes a record rather than reports on it: a package's `description`, a
//! crate's `name`, a name listed under a key. An error word there is what the record is about.

use super::{clip_str, signal, Field, Severity, Unit};

/// Keys whose values describe or name a record (a package's `description`, a crate's `name`,
/// an issue's `title`): an error word in one (`"description": "Windows error handling"`,
/// `"name": "quick-error"`, `"summary": "A fast memory error detector"`) is what the record is
/// about, not something that went wrong.
const DESCRIPTIVE_KEYS: &[&str] = &[
    "description",
    "long_description",
    "summary",
    "title",
    "name",
    "displayname",
    "display_name",
    "help",
    "doc",
    "docs",
    "documentation",
    "readme",
    "keywords",
    "categories",
    "homepage",
    "repository",
    "license",
    "authors",
];

/// True when the last key of `path` (`packages[].description`, `@title`) is one of
/// [`DESCRIPTIVE_KEYS`].
pub(super) fn descriptive_key(path: &str) -> bool {
    let key = path
        .rsplit(['.', '/', ' '])
        .next()
        .unwrap_or(path)
        .trim_start_matches('@')
        .trim_end_matches("[]")
        .to_ascii_lowercase();
    DESCRIPTIVE_KEYS.contains(&key.as_str())
}

/// True when record `u`'s error or warning words are all in the values of its descriptive
/// fields ([`DESCRIPTIVE_KEYS`]) or in names listed under a key (`"Imports": ["errors"]`): one
/// of those holds one, and no other field does (judged with its key: `"error": "timeout"` and
/// `"status": "failed"` are errors).
pub(super) fn described_only(u: &Unit, fields: &[Field]) -> bool {
    let mut described = false;
    for (f, v) in &u.fields {
        let name = &fields[*f].name;
        if descriptive_key(name) {
            described |= signal::severity(clip_str(v, 1000)) != Severity::None;
            continue;
        }
        // A name in a list (`"Imports": ["errors", …]` of `go list -json`) names a thing,
        // as a descriptive value does.
        if name.ends_with("[]") && !v.is_empty() && !v.contains(char::is_whitespace) {
            described |= signal::severity(clip_str(v, 1000)) != Severity::None;
            continue;
        }
        let key = name.rsplit(['.', '/', ' ']).next().unwrap_or(name);
        if signal::severity(clip_str(&format!("{key}: {v}"), 1000)) != Severity::None {
            return false;
        }
    }
    described
}
