//! Where things are in a JSON text: byte offsets of lines, of every array's elements and of
//! object keys, found by one scan of the text, so records and fields are anchored to lines.

use std::collections::HashMap;

/// Byte offsets where each line starts (index 0 is line 1).
pub fn line_starts(text: &str) -> Vec<usize> {
    let mut v = vec![0];
    v.extend(memchr::memchr_iter(b'\n', text.as_bytes()).map(|i| i + 1));
    v
}

/// 1-based line of a byte offset.
pub fn line_of(starts: &[usize], off: usize) -> usize {
    match starts.binary_search(&off) {
        Ok(i) => i + 1,
        Err(i) => i,
    }
}

/// Array path (object keys, `[]` for array nesting) -> byte offsets of its elements.
pub type ArraySpans = HashMap<Vec<String>, Vec<usize>>;
/// Key path -> byte offset of the key's first occurrence.
pub type KeySpans = HashMap<Vec<String>, usize>;

/// Byte offsets of the elements of every array in `text`, keyed by the array's path
/// (object keys, `[]` for array nesting), down to `max_depth`. Also the offsets of object keys
/// (path ending in the key) so a field can be anchored to its line.
pub fn spans(text: &str, max_depth: usize) -> (ArraySpans, KeySpans) {
    #[derive(Clone)]
    enum Frame {
        Arr,
        Obj(Option<String>),
    }
    let b = text.as_bytes();
    let mut arrays: HashMap<Vec<String>, Vec<usize>> = HashMap::new();
    let mut keys: HashMap<Vec<String>, usize> = HashMap::new();
    let mut stack: Vec<Frame> = Vec::new();
    let mut path: Vec<String> = Vec::new();
    let mut expect_value = true;
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        match c {
            b' ' | b'\n' | b'\r' | b'\t' | b':' => {}
            b',' => {
                expect_value = matches!(stack.last(), Some(Frame::Arr));
                if let Some(Frame::Obj(k)) = stack.last_mut() {
                    if k.take().is_some() {
                        path.pop();
                    }
                }
            }
            b'"' => {
                let start = i;
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    if b[i] == b'\\' {
                        i += 1;
                    }
                    i += 1;
                }
                let in_obj_key = matches!(stack.last(), Some(Frame::Obj(None)));
                if in_obj_key {
                    let k = String::from_utf8_lossy(&b[start + 1..i.min(b.len())]).into_owned();
                    path.push(k.clone());
                    if path.len() <= max_depth + 1 {
                        keys.entry(path.clone()).or_insert(start);
                    }
                    if let Some(Frame::Obj(slot)) = stack.last_mut() {
                        *slot = Some(k);
                    }
                } else if expect_value {
                    if let Some(Frame::Arr) = stack.last() {
                        if path.len() <= max_depth {
                            arrays.entry(path.clone()).or_default().push(start);
                        }
                    }
                    expect_value = false;
                }
            }
            b'{' | b'[' => {
                if expect_value || stack.is_empty() {
                    if let Some(Frame::Arr) = stack.last() {
                        if path.len() <= max_depth {
                            arrays.entry(path.clone()).or_default().push(i);
                        }
                    }
                }
                if matches!(stack.last(), Some(Frame::Arr)) {
                    path.push("[]".to_string());
                }
                if c == b'{' {
                    stack.push(Frame::Obj(None));
                    expect_value = false;
                } else {
                    stack.push(Frame::Arr);
                    expect_value = true;
                }
            }
            b'}' | b']' => {
                if let Some(Frame::Obj(Some(_))) = stack.last() {
                    path.pop();
                }
                stack.pop();
                if matches!(stack.last(), Some(Frame::Arr)) {
                    path.pop();
                }
                expect_value = false;
            }
            _ => {
                if expect_value {
                    if let Some(Frame::Arr) = stack.last() {
                        if path.len() <= max_depth {
                            arrays.entry(path.clone()).or_default().push(i);
                        }
                    }
                    expect_value = false;
                }
                while i + 1 < b.len()
                    && !matches!(b[i + 1], b',' | b']' | b'}' | b' ' | b'\n' | b'\r' | b'\t')
                {
                    i += 1;
                }
            }
        }
        i += 1;
    }
    (arrays, keys)
}
