//! Tests of binary detection, decoding and blob replacement, and in-memory PNG and WAV files
//! for tests elsewhere in the crate.

use super::*;
use base64::engine::general_purpose::STANDARD;

/// A valid `w`×`h` PNG built in memory (8-bit grayscale, stored zlib blocks, real CRCs).
pub(crate) fn png(w: u32, h: u32) -> Vec<u8> {
    fn crc32(data: &[u8]) -> u32 {
        let mut c = 0xffff_ffffu32;
        for &b in data {
            c ^= u32::from(b);
            for _ in 0..8 {
                c = if c & 1 != 0 {
                    0xedb8_8320 ^ (c >> 1)
                } else {
                    c >> 1
                };
            }
        }
        !c
    }
    fn chunk(out: &mut Vec<u8>, kind: &[u8; 4], data: &[u8]) {
        out.extend_from_slice(&(data.len() as u32).to_be_bytes());
        let mut body = kind.to_vec();
        body.extend_from_slice(data);
        out.extend_from_slice(&body);
        out.extend_from_slice(&crc32(&body).to_be_bytes());
    }
    let mut raw = Vec::new();
    for y in 0..h {
        raw.push(0u8);
        raw.extend((0..w).map(|x| ((x * 7 + y * 13) % 251) as u8));
    }
    let mut z = vec![0x78, 0x01];
    for (i, block) in raw.chunks(65_535).enumerate() {
        let last = (i + 1) * 65_535 >= raw.len();
        z.push(u8::from(last));
        let n = block.len() as u16;
        z.extend_from_slice(&n.to_le_bytes());
        z.extend_from_slice(&(!n).to_le_bytes());
        z.extend_from_slice(block);
    }
    let (mut a, mut b) = (1u32, 0u32);
    for &x in &raw {
        a = (a + u32::from(x)) % 65_521;
        b = (b + a) % 65_521;
    }
    z.extend_from_slice(&((b << 16) | a).to_be_bytes());
    let mut out = b"\x89PNG\r\n\x1a\n".to_vec();
    let mut ihdr = Vec::new();
    ihdr.extend_from_slice(&w.to_be_bytes());
    ihdr.extend_from_slice(&h.to_be_bytes());
    ihdr.extend_from_slice(&[8, 0, 0, 0, 0]);
    chunk(&mut out, b"IHDR", &ihdr);
    chunk(&mut out, b"IDAT", &z);
    chunk(&mut out, b"IEND", &[]);
    out
}

/// A valid 8 kHz mono 16-bit PCM WAV of `samples` samples (a RIFF header and a sine-ish
/// ramp), built in memory.
pub(crate) fn wav(samples: u32) -> Vec<u8> {
    let data_len = samples * 2;
    let mut out = b"RIFF".to_vec();
    out.extend_from_slice(&(36 + data_len).to_le_bytes());
    out.extend_from_slice(b"WAVEfmt ");
    out.extend_from_slice(&16u32.to_le_bytes());
    out.extend_from_slice(&1u16.to_le_bytes()); // PCM
    out.extend_from_slice(&1u16.to_le_bytes()); // mono
    out.extend_from_slice(&8_000u32.to_le_bytes());
    out.extend_from_slice(&16_000u32.to_le_bytes());
    out.extend_from_slice(&2u16.to_le_bytes());
    out.extend_from_slice(&16u16.to_le_bytes());
    out.extend_from_slice(b"data");
    out.extend_from_slice(&data_len.to_le_bytes());
    for i in 0..samples {
        let v = ((i % 40) as i16 - 20) * 800;
        out.extend_from_slice(&v.to_le_bytes());
    }
    out
}

fn corpus(name: &str) -> Vec<u8> {
    crate::guard::test_corpus(name)
}

#[test]
fn plain_base64_png() {
    let p = png(200, 120);
    let b64 = STANDARD.encode(&p);
    let blob = whole(b64.as_bytes()).expect("png");
    assert_eq!(blob.media_type, "image/png");
    assert_eq!(blob.ext, "png");
    assert_eq!(blob.dims, Some((200, 120)));
    assert_eq!(blob.bytes, p);
    // Line-wrapped at 76 chars with a trailing newline, and as a JSON string.
    let wrapped: String = b64
        .as_bytes()
        .chunks(76)
        .map(|c| format!("{}\n", std::str::from_utf8(c).unwrap()))
        .collect();
    assert_eq!(whole(wrapped.as_bytes()).unwrap().bytes, p);
    assert_eq!(whole(format!("\"{b64}\"").as_bytes()).unwrap().bytes, p);
}

#[test]
fn data_uri_png() {
    let p = png(3, 2);
    let uri = format!("data:image/png;base64,{}", STANDARD.encode(&p));
    let blob = whole(uri.as_bytes()).unwrap();
    assert_eq!(
        (blob.media_type.as_str(), blob.dims),
        ("image/png", Some((3, 2)))
    );
    // A declared type cannot inject quotes into the description.
    let odd = format!("data:app/x\"y;base64,{}", STANDARD.encode([1u8; 64]));
    assert_eq!(whole(odd.as_bytes()).unwrap().media_type, "app/xy");
    // A text data: URI is not a file.
    let t = format!("data:text/plain;base64,{}", STANDARD.encode("hello world"));
    assert!(whole(t.as_bytes()).is_none());
}

#[test]
fn text_is_not_binary() {
    assert!(whole(b"hello world\n").is_none());
    assert!(
        whole(b"SGVsbG8gd29ybGQ=").is_none(),
        "base64 of text stays text"
    );
    assert!(whole(b"").is_none());
    assert!(whole("日本語のログ\n".as_bytes()).is_none());
    // A few invalid bytes: still text.
    let mut t = b"a long enough line of ordinary log text ".repeat(10);
    t.push(0xff);
    assert!(whole(&t).is_none());
}

#[test]
fn raw_bytes_are_binary() {
    let mut nul = b"abc".to_vec();
    nul.push(0);
    let blob = whole(&nul).unwrap();
    assert_eq!(blob.origin, Origin::Raw);
    assert_eq!(blob.media_type, "application/octet-stream");
    assert_eq!(blob.bytes, nul);
    let junk: Vec<u8> = (0..1000u32).map(|i| (i * 37 % 128 + 128) as u8).collect();
    assert!(whole(&junk).is_some());
    let raw_png = png(4, 4);
    let b = whole(&raw_png).unwrap();
    assert_eq!((b.media_type.as_str(), b.dims), ("image/png", Some((4, 4))));
    assert!(b.describe("x").contains("of raw binary data"));
}

#[test]
fn blobs_in_mcp_json() {
    let p = png(200, 120);
    let j = serde_json::json!({"content": [
        {"type": "text", "text": "### Result\nTook a screenshot"},
        {"type": "image", "data": STANDARD.encode(&p), "mimeType": "image/png"},
        {"type": "text", "text": "x".repeat(500)},
        {"type": "resource", "blob": format!("data:image/png;base64,{}", STANDARD.encode(png(1, 1)))},
        {"sha": "ab".repeat(64)},
    ]});
    let text = serde_json::to_string_pretty(&j).unwrap();
    let found = find_blobs(&text);
    assert_eq!(found.len(), 2);
    assert_eq!(found[0].1.dims, Some((200, 120)));
    assert_eq!(found[1].1.dims, Some((1, 1)));
    let d = tempfile::tempdir().unwrap();
    let r = replace_blobs(&text, d.path(), "mcp__pw__shot")
        .unwrap()
        .unwrap();
    assert!(r.failure.is_none());
    assert_eq!(r.saved.len(), 2);
    assert_eq!(std::fs::read(d.path().join(&r.saved[0].path)).unwrap(), p);
    let v: serde_json::Value = serde_json::from_str(&r.text).expect("still JSON");
    let data = v["content"][1]["data"].as_str().unwrap();
    assert!(data.starts_with("[image/png 200x120, "), "{data}");
    assert!(data.contains(&r.saved[0].path));
    assert_eq!(v["content"][0]["text"], "### Result\nTook a screenshot");
    assert_eq!(v["content"][4]["sha"], "ab".repeat(64));
}

#[test]
fn base64_in_json_in_an_mcp_text_block() {
    let w = wav(400);
    let inner = serde_json::json!({"audio": STANDARD.encode(&w), "format": "wav", "seconds": 0.05});
    let mcp = serde_json::json!({"content": [
        {"type": "text", "text": inner.to_string()},
        {"type": "text", "text": "transcribed: \"hello\""},
    ]});
    let text = mcp.to_string();
    assert!(text.contains("{\\\"audio\\\":\\\"UklGR"), "{text}");
    let found = find_blobs(&text);
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].1.media_type, "audio/x-wav");
    assert_eq!(found[0].1.bytes, w);
    assert!(text[found[0].0.clone()].starts_with("\"{\\\"audio"));
    let d = tempfile::tempdir().unwrap();
    let r = replace_blobs(&text, d.path(), "mcp__tts__speak")
        .unwrap()
        .unwrap();
    assert_eq!(r.saved.len(), 1);
    assert!(r.saved[0].path.ends_with(".wav"), "{}", r.saved[0].path);
    assert_eq!(std::fs::read(d.path().join(&r.saved[0].path)).unwrap(), w);
    assert!(!r.text.contains("UklGR"), "{}", r.text);
    // Both levels stay valid JSON; the inner one keeps its other fields.
    let v: serde_json::Value = serde_json::from_str(&r.text).unwrap();
    let inner: serde_json::Value =
        serde_json::from_str(v["content"][0]["text"].as_str().unwrap()).unwrap();
    let desc = inner["audio"].as_str().unwrap();
    assert!(
        desc.starts_with("[audio/x-wav, 844 bytes decoded from base64, saved to long_responses/"),
        "{desc}"
    );
    assert_eq!(inner["format"], "wav");
    assert_eq!(v["content"][1]["text"], "transcribed: \"hello\"");
}

#[test]
fn nested_three_levels_and_the_limit() {
    let p = png(5, 4);
    let mut doc = serde_json::json!({"image": STANDARD.encode(&p)});
    for level in 0..3 {
        doc = serde_json::json!({"level": level, "payload": doc.to_string()});
    }
    let text = doc.to_string();
    let found = find_blobs(&text);
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].1.dims, Some((5, 4)));
    let d = tempfile::tempdir().unwrap();
    let r = replace_blobs(&text, d.path(), "t").unwrap().unwrap();
    let mut v: serde_json::Value = serde_json::from_str(&r.text).unwrap();
    for _ in 0..3 {
        v = serde_json::from_str(v["payload"].as_str().unwrap()).unwrap();
    }
    assert!(v["image"].as_str().unwrap().starts_with("[image/png 5x4, "));
    // Past MAX_NESTING levels the blob is left alone (and nothing panics).
    let mut deep = serde_json::json!({"image": STANDARD.encode(&p)});
    for _ in 0..=MAX_NESTING {
        deep = serde_json::json!({"p": deep.to_string()});
    }
    assert!(find_blobs(&deep.to_string()).is_empty());
    // Escaped JSON without blobs is not rewritten.
    let plain = serde_json::json!({"text": serde_json::json!({"a": "x".repeat(100)}).to_string()});
    assert!(replace_blobs(&plain.to_string(), d.path(), "t")
        .unwrap()
        .is_none());
}

#[test]
fn escaped_base64_in_json() {
    let p = png(10, 10);
    let b64 = STANDARD.encode(&p).replace('/', "\\/");
    let text = format!("{{\"data\":\"{b64}\"}}");
    let found = find_blobs(&text);
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].1.bytes, p);
}

#[test]
fn case_08_screenshot() {
    let raw = corpus("cases/case_08_mcp_screenshot.json");
    let text = String::from_utf8(raw).unwrap();
    assert!(whole(text.as_bytes()).is_none());
    let d = tempfile::tempdir().unwrap();
    let r = replace_blobs(&text, d.path(), "mcp__playwright__browser_take_screenshot")
        .unwrap()
        .unwrap();
    assert!(r.text.len() < 1024, "{}", r.text);
    assert!(
        r.text.contains("image/png 200x120, 28,627 bytes"),
        "{}",
        r.text
    );
    assert!(r
        .text
        .contains("Took a screenshot of the full current page."));
    assert!(!r.text.contains("iVBOR"));
    assert_eq!(r.saved[0].bytes, 28_627);
}

#[test]
fn b64_01_corpus() {
    let text = String::from_utf8(corpus("b64_01.json")).unwrap();
    let found = find_blobs(&text);
    assert_eq!(found.len(), 1);
    let b = &found[0].1;
    assert_eq!(b.media_type, "image/png");
    assert_eq!(b.dims, Some((846, 1006)));
    assert_eq!(b.bytes.len(), 53_949);
}
