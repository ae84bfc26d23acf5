//! Property tests of the detectors: arbitrary bytes never panic and blob ranges are string
//! literals; a mutated or truncated base64 PNG (alone, in JSON, in a data URI, in JSON inside a
//! JSON string) never panics, its replacement keeps JSON valid, and unmutated it is found.

use super::*;
use base64::engine::general_purpose::STANDARD;
use proptest::prelude::*;
use serde_json::{json, Value};

/// A base64 PNG, possibly mutated: `(flips, cut)` change bytes of the base64 text.
fn mutated_png_b64(w: u32, h: u32, flips: &[(usize, u8)], cut: usize) -> String {
    let mut b64 = STANDARD.encode(tests::png(w, h)).into_bytes();
    for &(i, b) in flips {
        let n = b64.len();
        b64[i % n] = b;
    }
    b64.truncate(b64.len().saturating_sub(cut));
    String::from_utf8_lossy(&b64).into_owned()
}

proptest! {
    /// The detectors on arbitrary bytes never panic, and blob ranges are char-aligned
    /// string literals inside the text.
    #[test]
    fn arbitrary_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..2048)) {
        let _ = sniff(&bytes);
        let _ = decode_base64(&bytes);
        let _ = split_data_uri(&bytes);
        let _ = is_raw_binary(&bytes);
        let _ = whole(&bytes);
        let text = String::from_utf8_lossy(&bytes);
        for (r, _) in find_blobs(&text) {
            prop_assert!(text.is_char_boundary(r.start) && text.is_char_boundary(r.end));
            prop_assert!(text[r.clone()].starts_with('"') && text[r].ends_with('"'));
        }
    }

    /// A (mutated) base64 PNG inside JSON, a data URI, alone, or inside JSON inside a JSON
    /// string: no panic; whenever it is replaced, the replacement text no longer holds the
    /// base64 and JSON stays JSON; unmutated, it is found.
    #[test]
    fn mutated_png_in_json(
        w in 1u32..24,
        h in 1u32..24,
        flips in proptest::collection::vec((any::<usize>(), any::<u8>()), 0..3),
        cut in prop_oneof![Just(0usize), 0usize..40],
        wrap in 0u8..4,
        prefix in "[ -~]{0,20}",
    ) {
        let b64 = mutated_png_b64(w, h, &flips, cut);
        let clean = flips.is_empty() && cut == 0;
        let body = match wrap {
            0 => json!({"content": [{"type": "image", "data": b64}], "note": prefix}).to_string(),
            1 => json!({"src": format!("data:image/png;base64,{b64}"), "p": prefix}).to_string(),
            2 => format!("{prefix}\"{b64}\""),
            // Nested: an MCP text block whose text is JSON holding the image.
            _ => json!({"content": [{"type": "text", "text": json!({"data": b64, "p": prefix}).to_string()}]}).to_string(),
        };
        let _ = whole(b64.as_bytes());
        if clean {
            let blob = whole(b64.as_bytes());
            prop_assert!(blob.is_some_and(|b| b.media_type == "image/png"));
        }
        let dir = tempfile::tempdir().unwrap();
        let found = find_blobs(&body);
        match replace_blobs(&body, dir.path(), "shot").unwrap() {
            Some(r) => {
                prop_assert!(!found.is_empty());
                prop_assert!(!r.text.contains(b64.as_str()), "{}", r.text);
                prop_assert_eq!(r.saved.len(), found.len());
                if wrap != 2 {
                    prop_assert!(serde_json::from_str::<Value>(&r.text).is_ok(), "{}", r.text);
                }
            }
            None => {
                prop_assert!(found.is_empty());
                prop_assert!(!clean || wrap == 2 && prefix.contains('"'), "clean PNG not found in {body}");
            }
        }
    }
}
