//! Sampled call stacks: a profiler's raw samples or aggregated stacks, of any tool. `perf
//! script`, DTrace and bpftrace print one stack per blank-line-separated block (leaf frame
//! first, an optional header line naming the thread before it, an optional count line after
//! it); collapsed ("folded") stacks print one stack per line, root first, frames joined by `;`,
//! then a count. Thousands of frames repeat across thousands of stacks, so no line is rare and
//! no number is extreme: the answer to "where is the time spent" is a sum over stacks.
//!
//! Nothing here knows a profiler: a block stack is a run of indented frame lines (an address
//! then a symbol, one token holding `` ` ``, `+0x` or `::`, or `at f(...)`), a folded stack a
//! line of `;`-joined frames ending in a count. When most of the output is such stacks, Key
//! facts (one entry per line) are proposed to the kind channel: the stacks and samples, the
//! functions with the most samples at the top of a stack (self, summed over their addresses),
//! the heaviest stacks (their count as written, anchored), the header lines with the most
//! samples (threads, a thread dump's states), and the frames the question names with the
//! samples of their stacks. Sums are toolsum's counts, written `×N`, and saturate rather than
//! wrap.

use std::collections::HashMap;
use std::sync::LazyLock;

use regex::Regex;

use super::{Cand, Channel};
use crate::guard::reduce::rank::Query;
use crate::guard::reduce::{clip_str, Item};

/// A frame written as an address then a symbol (`7f1e214c24d9 SpinPause (libjvm.so)`).
static ADDRESS_FRAME: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^(?:0x)?[0-9a-fA-F]{6,16}\s+\S").expect("valid regex"));
/// A folded stack: `;`-joined frames, a space, a count.
static FOLDED: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^([^\s;][^;]*(?:;[^;]*)+)\s+(\d+)\s*$").expect("valid regex"));
/// A block's count line: a lone integer (DTrace) or `]: N` (bpftrace).
static COUNT: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^\s*(?:\]:\s*)?(\d+)\s*$").expect("valid regex"));

/// Fewest stacks for the output to be a profile.
const MIN_STACKS: usize = 10;
/// Least share of the non-blank lines that stacks (their frames, headers and counts) cover.
const MIN_COVER: f64 = 0.6;
/// Lines not folded stacks after which a text whose stacks are fewer is not read further.
const PROBE_LINES: usize = 50;
/// Self frames listed.
const TOP_FRAMES: usize = 5;
/// Header lines (threads) listed.
const TOP_HEADERS: usize = 3;
/// Frames the question names listed.
const TOP_NAMED: usize = 3;
/// Heaviest stacks listed.
const TOP_STACKS: usize = 3;
/// Frames of a heaviest stack shown from its leaf (and, folded, from its root).
const LEAF_FRAMES: usize = 3;
const ROOT_FRAMES: usize = 2;
/// Longest frame shown, in bytes.
const MAX_FRAME_BYTES: usize = 120;
/// Shortest question word matched inside a frame.
const MIN_NAME: usize = 3;
/// Score of a fact in the kind channel: above the line reducer's items (at most 60 for a line
/// input), below a specific reducer's verdicts (95 and up).
const SCORE: f64 = 90.0;

/// One stack: its frames leaf first, its weight (samples), the 1-based line of its leaf frame
/// (a folded stack's own line), of its count line if any, and its header line, if any.
#[derive(Debug)]
struct Stack<'a> {
    frames: Vec<&'a str>,
    weight: u64,
    line: usize,
    count_line: Option<usize>,
    header: Option<&'a str>,
    /// Folded: the frames as the line writes them, root first.
    folded: bool,
}

/// A frame as shown: the line trimmed, without the address before its symbol.
fn frame_text(line: &str) -> Option<&str> {
    let t = line.trim();
    if t.is_empty() {
        return None;
    }
    if ADDRESS_FRAME.is_match(t) {
        let sym = t.split_once(char::is_whitespace).map(|x| x.1.trim())?;
        return Some(sym);
    }
    if let Some(rest) = t.strip_prefix("at ") {
        // `at pkg.Class.method(File.java:12)`, `(Native Method)`: no space before the `(`.
        let call = rest.split('(').next().unwrap_or("");
        if rest.ends_with(')') && rest.contains('(') && !call.is_empty() && !call.contains(' ') {
            return Some(t);
        }
        return None;
    }
    if !t.contains(char::is_whitespace)
        && (t.contains('`') || t.contains("+0x") || t.contains("::"))
    {
        return Some(t);
    }
    None
}

/// Folded stacks of `lines`, when most non-blank, non-comment lines are folded stacks.
fn folded<'a>(lines: &[&'a str]) -> Option<Vec<Stack<'a>>> {
    let mut out = Vec::new();
    let mut other = 0usize;
    for (i, l) in lines.iter().enumerate() {
        let t = l.trim_end_matches('\r');
        if t.trim().is_empty() || t.starts_with('#') {
            continue;
        }
        match FOLDED.captures(t) {
            Some(c) => {
                let weight = c[2].parse().unwrap_or(0);
                let stack = c.get(1).map_or("", |m| m.as_str());
                let mut frames: Vec<&str> = stack.split(';').filter(|f| !f.is_empty()).collect();
                // A frame is a name: a row of `;`-separated values (`Alice;30;Paris 75001`)
                // has a number for a field.
                if frames.len() < 2 || frames.iter().any(|f| f.bytes().all(|b| b.is_ascii_digit()))
                {
                    other += 1;
                    continue;
                }
                frames.reverse();
                out.push(Stack {
                    frames,
                    weight,
                    line: i + 1,
                    count_line: Some(i + 1),
                    header: None,
                    folded: true,
                });
            }
            None => other += 1,
        }
        // Most of the first lines tell: a profile's are stacks from its first ones on.
        if other == PROBE_LINES && out.len() < PROBE_LINES {
            return None;
        }
    }
    let cover = out.len() as f64 / (out.len() + other).max(1) as f64;
    (out.len() >= MIN_STACKS && cover >= MIN_COVER).then_some(out)
}

/// Block stacks of `lines`: runs of frame lines, each with the non-frame line just before it
/// as its header and a count line just after it as its weight (else 1).
fn blocks<'a>(lines: &[&'a str]) -> Option<Vec<Stack<'a>>> {
    let mut out = Vec::new();
    let (mut covered, mut nonblank) = (0usize, 0usize);
    let mut i = 0;
    while i < lines.len() {
        let l = lines[i].trim_end_matches('\r');
        if l.trim().is_empty() {
            i += 1;
            continue;
        }
        nonblank += 1;
        let indented = l.starts_with([' ', '\t']);
        if !(indented && frame_text(l).is_some()) {
            i += 1;
            continue;
        }
        let start = i;
        let mut frames = Vec::new();
        let mut notes = 0;
        while i < lines.len() {
            let l = lines[i].trim_end_matches('\r');
            match frame_text(l).filter(|_| l.starts_with([' ', '\t'])) {
                Some(f) => frames.push(f),
                // A note between frames (a JVM's `- waiting to lock <0x…>`, `- locked <0x…>`)
                // belongs to the stack; it is no frame.
                None if !frames.is_empty()
                    && l.trim_start().starts_with("- ")
                    && l.starts_with([' ', '\t']) =>
                {
                    notes += 1;
                }
                None => break,
            }
            i += 1;
        }
        nonblank += frames.len() + notes - 1;
        covered += frames.len() + notes;
        let header = start
            .checked_sub(1)
            .map(|h| lines[h].trim())
            .filter(|h| !h.is_empty() && COUNT.captures(h).is_none());
        if header.is_some() {
            covered += 1;
        }
        let mut weight = 1;
        let mut count_line = None;
        if let Some(c) = lines.get(i).and_then(|l| COUNT.captures(l)) {
            weight = c[1].parse().unwrap_or(1);
            count_line = Some(i + 1);
            covered += 1;
            nonblank += 1;
            i += 1;
        }
        out.push(Stack {
            frames,
            weight,
            line: start + 1,
            count_line,
            header,
            folded: false,
        });
    }
    let cover = covered as f64 / nonblank.max(1) as f64;
    (out.len() >= MIN_STACKS && cover >= MIN_COVER).then_some(out)
}

/// A frame's function: the frame without its offset (`+0x36c`) and the module after it
/// (` (/usr/sbin/nginx)`), so that the addresses of one function sum together.
fn function(frame: &str) -> &str {
    let f = frame.split(" (").next().unwrap_or(frame);
    match f.rfind("+0x") {
        Some(p) if f[p + 3..].bytes().all(|b| b.is_ascii_hexdigit()) => &f[..p],
        _ => f,
    }
}

/// `×N (P%)` of `total`: toolsum's sum, and its share as a whole percent (three digits would
/// read as a figure quoted from the input; a share of the whole is said as "all").
fn share(w: u64, total: u64) -> String {
    let pct = (100.0 * w as f64 / total.max(1) as f64).round() as u64;
    match pct {
        _ if w >= total => format!("×{w} (all)"),
        100.. => format!("×{w} (>99%)"),
        0 => format!("×{w} (<1%)"),
        p => format!("×{w} ({p}%)"),
    }
}

/// Keys by weight, heaviest first (ties in first-seen order), at most `n`.
fn top<'a>(w: &HashMap<&'a str, (u64, usize)>, n: usize) -> Vec<(&'a str, u64)> {
    let mut v: Vec<(&str, u64, usize)> = w.iter().map(|(k, (x, o))| (*k, *x, *o)).collect();
    v.sort_by(|a, b| b.1.cmp(&a.1).then(a.2.cmp(&b.2)));
    v.into_iter().take(n).map(|(k, x, _)| (k, x)).collect()
}

fn add<'a>(m: &mut HashMap<&'a str, (u64, usize)>, k: &'a str, w: u64) {
    let n = m.len();
    let e = m.entry(k).or_insert((0, n));
    e.0 = e.0.saturating_add(w);
}

/// A header's thread: the header as written when headers repeat, else its first two words
/// (`comm pid` before a timestamp that makes each header unique).
fn thread_key(h: &str, unique: bool) -> &str {
    if !unique {
        return h;
    }
    let mut end = 0;
    for w in h.split_whitespace().take(2) {
        end += h[end..].find(w).unwrap_or(0) + w.len();
    }
    &h[..end]
}

/// Words a question about a profile uses for the profile itself, not for code it names.
const PROFILE_WORDS: &[&str] = &[
    "stack",
    "stacks",
    "frame",
    "frames",
    "sample",
    "samples",
    "sampled",
    "function",
    "functions",
    "thread",
    "threads",
    "process",
    "processes",
    "time",
    "top",
    "self",
    "cpu",
    "call",
    "calls",
    "profile",
    "hottest",
    "most",
    "spend",
    "spent",
    "count",
    "counts",
];

/// True when `frame` (lowercase) holds `name` as a word of its own: no letter or digit on
/// either side (`zfs` in ``zfs`zfs_lookup+0x88``, not `top` in `setObjectProp`).
fn holds(frame: &str, name: &str) -> bool {
    frame.match_indices(name).any(|(at, _)| {
        let before = frame[..at].chars().next_back();
        let after = frame[at + name.len()..].chars().next();
        !before.is_some_and(char::is_alphanumeric) && !after.is_some_and(char::is_alphanumeric)
    })
}

/// Candidates of [`Channel::Kind`]: the facts of the sampled call stacks `text` holds (see the
/// module's doc); none when most of it is not stacks.
pub fn stacks(text: &str, q: &Query) -> Vec<Cand> {
    let lines: Vec<&str> = text.split('\n').collect();
    let Some(st) = folded(&lines).or_else(|| blocks(&lines)) else {
        return Vec::new();
    };
    let total: u64 = st.iter().fold(0, |a, s| a.saturating_add(s.weight));
    // One entry per fact line: two frames on one line would read as one backticked quote
    // (`` unix`a+0x1, unix`b+0x2 `` holds `` `a+0x1, unix` ``).
    let weighted = st.iter().any(|s| s.weight > 1);
    // What a sum counts: samples when stacks carry counts, else stacks (a thread dump's).
    let unit = if weighted { "samples" } else { "stacks" };
    let mut facts = vec![format!(
        "call stacks: ×{} stacks{}",
        st.len(),
        if weighted {
            format!(", ×{total} samples (each stack's count line, else 1)")
        } else {
            " (no count lines: each stack counts once)".to_string()
        }
    )];
    // Self: the leaf frame of each stack, summed per function over its addresses
    // (`f+0x36c` and `f+0x12` are one function), shown by its most sampled address.
    let mut own: HashMap<&str, (u64, usize)> = HashMap::new();
    let mut by_fn: HashMap<&str, (u64, usize)> = HashMap::new();
    for s in &st {
        if let Some(f) = s.frames.first() {
            add(&mut own, f, s.weight);
            add(&mut by_fn, function(f), s.weight);
        }
    }
    let shown = |f: &str| clip_str(f, MAX_FRAME_BYTES).to_string();
    for (func, fw) in top(&by_fn, TOP_FRAMES) {
        let mut variants: Vec<(&str, u64, usize)> = own
            .iter()
            .filter(|(f, _)| function(f) == func)
            .map(|(f, (w, o))| (*f, *w, *o))
            .collect();
        variants.sort_by(|a, b| b.1.cmp(&a.1).then(a.2.cmp(&b.2)));
        let (f, w, _) = variants[0];
        let mut line = format!("top of stack (self): {} {}", shown(f), share(w, total));
        if variants.len() > 1 {
            line.push_str(&format!(
                "; its function at all {} addresses {}",
                variants.len(),
                share(fw, total)
            ));
        }
        facts.push(line);
    }
    // The heaviest stacks, their count as written.
    let mut order: Vec<&Stack> = st.iter().collect();
    order.sort_by(|a, b| b.weight.cmp(&a.weight).then(a.line.cmp(&b.line)));
    if order.first().is_some_and(|s| s.weight > 1) {
        for s in order.iter().take(TOP_STACKS) {
            let text = if s.folded {
                // As the line writes it: root first, `;`-joined, then the count.
                let root: Vec<&str> = s.frames.iter().rev().copied().collect();
                let path = if root.len() <= ROOT_FRAMES + LEAF_FRAMES {
                    root.join(";")
                } else {
                    format!(
                        "{};…;{}",
                        root[..ROOT_FRAMES].join(";"),
                        root[root.len() - LEAF_FRAMES..].join(";")
                    )
                };
                format!("heaviest stack (L{}): {path} {}", s.line, s.weight)
            } else {
                // Leaf first, then its callers while no two frames hold a backtick.
                let mut path = shown(s.frames[0]);
                for f in s.frames.iter().skip(1).take(LEAF_FRAMES - 1) {
                    if f.contains('`') && path.contains('`') {
                        break;
                    }
                    path = format!("{path} ← {}", shown(f));
                }
                let at = match s.count_line {
                    Some(c) => format!("count line L{c}, leaf frame L{}", s.line),
                    None => format!("leaf frame L{}", s.line),
                };
                format!("heaviest stack: {} ({at}), leaf first: {path}", s.weight)
            };
            facts.push(text);
        }
    }
    // Samples per header line (thread, process), when the headers tell stacks apart.
    let heads: Vec<&str> = st.iter().filter_map(|s| s.header).collect();
    if heads.len() * 2 >= st.len() {
        let distinct: std::collections::HashSet<&str> = heads.iter().copied().collect();
        let unique = distinct.len() * 2 > heads.len();
        let mut by: HashMap<&str, (u64, usize)> = HashMap::new();
        for s in &st {
            if let Some(h) = s.header {
                add(&mut by, thread_key(h, unique), s.weight);
            }
        }
        if by.len() >= 2 {
            for (h, w) in top(&by, TOP_HEADERS) {
                facts.push(format!("{unit} under header: {h} {}", share(w, total)));
            }
        }
    }
    // Frames the question names (a word of it inside the frame), by the samples of the
    // stacks they are in; a word in most frames names none.
    let names: Vec<String> = q
        .names
        .iter()
        .filter(|n| n.len() >= MIN_NAME && !PROFILE_WORDS.contains(&n.as_str()))
        .map(|n| n.to_ascii_lowercase())
        .collect();
    if !names.is_empty() {
        // Per frame: samples of the stacks it is in, and the names it holds (read once per
        // distinct frame); per name: samples of the stacks one of whose frames holds it.
        let mut incl: HashMap<&str, (u64, usize)> = HashMap::new();
        let mut holding: HashMap<&str, Vec<usize>> = HashMap::new();
        let mut reach = vec![0u64; names.len()];
        for s in &st {
            let mut seen = std::collections::HashSet::new();
            let mut held = vec![false; names.len()];
            for f in &s.frames {
                if seen.insert(*f) {
                    add(&mut incl, f, s.weight);
                    let ks = holding.entry(f).or_insert_with(|| {
                        let lower = f.to_ascii_lowercase();
                        (0..names.len())
                            .filter(|&k| holds(&lower, &names[k]))
                            .collect()
                    });
                    for &k in ks.iter() {
                        held[k] = true;
                    }
                }
            }
            for (k, h) in held.iter().enumerate() {
                if *h {
                    reach[k] = reach[k].saturating_add(s.weight);
                }
            }
        }
        // A name in the stacks of most samples (`java` in a JVM's profile) picks nothing.
        let picks: Vec<bool> = reach
            .iter()
            .map(|r| *r > 0 && r.saturating_mul(2) <= total)
            .collect();
        let mut named: Vec<(&str, u64, usize, usize)> = incl
            .iter()
            .filter_map(|(f, (w, o))| {
                let k = holding[f].iter().filter(|&&k| picks[k]).count();
                (k > 0).then_some((*f, *w, k, *o))
            })
            .collect();
        named.sort_by(|a, b| b.2.cmp(&a.2).then(b.1.cmp(&a.1)).then(a.3.cmp(&b.3)));
        for (f, w, _, _) in named.iter().take(TOP_NAMED) {
            facts.push(format!(
                "frame the question names: {} in stacks of {}",
                shown(f),
                share(*w, total)
            ));
        }
    }
    facts
        .into_iter()
        .enumerate()
        .map(|(k, text)| Cand {
            item: Item::fact(k, text, SCORE),
            channel: Channel::Kind,
            score: SCORE - k as f64,
            group: None,
            rel: 1.0,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(c: &[Cand]) -> Vec<String> {
        c.iter().map(|c| c.item.text.clone()).collect()
    }

    /// Every fact passes the benchmark's checker: nothing in it reads as a figure or a quote
    /// the input does not hold.
    fn all_grounded(c: &[Cand], input: &str) {
        let collapsed = crate::bench::score::collapse(input);
        for t in texts(c) {
            let bad = crate::bench::score::invented(&t, &collapsed, &[]);
            assert!(bad.is_empty(), "{t}: {bad:?}");
        }
    }

    /// DTrace's aggregated stacks: leaf first, a count line after each.
    fn dtrace() -> String {
        let mut t =
            String::from("CPU     ID                    FUNCTION:NAME\n  0  64091  :tick-60s\n\n");
        for i in 0..40 {
            t.push_str(&format!(
                "\n              unix`mutex_enter+0x{i:x}\n              genunix`kmem_free+0x4e\n              unix`sys_syscall+0x17a\n                {}\n",
                1 + i % 3
            ));
        }
        t.push_str("\n              zfs`zfs_lookup+0x88\n              genunix`lookuppnvp+0x1f6\n                7\n");
        t.push_str("\n              unix`do_splx+0x65\n              genunix`fop_read+0x8b\n                1971\n");
        t
    }

    #[test]
    fn block_stacks_sum_self_samples_and_name_the_heaviest_by_its_count() {
        let text = dtrace();
        let c = stacks(
            &text,
            &Query::new("which stacks are hottest, and does zfs_lookup show up?"),
        );
        let t = texts(&c).join("\n");
        assert!(t.contains("call stacks: ×42 stacks"), "{t}");
        // The heaviest stack's count as the file writes it, its leaf, and its line.
        // Anchored at its count line, as the fact says.
        let count_line = text.lines().position(|l| l.trim() == "1971").unwrap() + 1;
        assert!(
            t.contains(&format!(
                "heaviest stack: 1971 (count line L{count_line}, leaf frame L{}",
                count_line - 2
            )),
            "{t}"
        );
        assert!(t.contains("unix`do_splx+0x65"), "{t}");
        // The self frame with the most samples first.
        let first_self = t.lines().find(|l| l.starts_with("top of stack")).unwrap();
        assert!(first_self.contains("unix`do_splx+0x65 ×1971"), "{t}");
        // The frame the question names, with the samples of its stacks.
        assert!(
            t.contains("frame the question names: zfs`zfs_lookup+0x88 in stacks of ×7"),
            "{t}"
        );
        all_grounded(&c, &text);
    }

    #[test]
    fn two_backticked_frames_never_share_a_line() {
        let c = stacks(&dtrace(), &Query::new("hottest stacks"));
        for t in texts(&c) {
            assert!(t.matches('`').count() <= 1, "{t}");
        }
    }

    #[test]
    fn sampled_stacks_count_samples_per_thread_and_drop_the_address() {
        let mut text = String::from("# ========\n# captured on: Thu Dec  4\n# ========\n#\n");
        for i in 0..30 {
            let tid = if i % 10 == 0 { 3244 } else { 3278 };
            let leaf = if i % 3 == 0 {
                "hypercall_page ([kernel.kallsyms])"
            } else {
                "SpinPause (/usr/lib/jvm/libjvm.so)"
            };
            text.push_str(&format!(
                "java  {tid} cpu-clock: \n\t    ffffffff8100130a {leaf}\n\t    7f1e2162ad6f StealTask::do_it(GCTaskManager*, unsigned int) (/usr/lib/jvm/libjvm.so)\n\n"
            ));
        }
        let c = stacks(&text, &Query::new("which thread has most samples?"));
        let t = texts(&c).join("\n");
        assert!(
            t.contains("top of stack (self): SpinPause (/usr/lib/jvm/libjvm.so) ×20 (67%)"),
            "{t}"
        );
        assert!(
            t.contains("top of stack (self): hypercall_page ([kernel.kallsyms]) ×10"),
            "{t}"
        );
        assert!(
            t.contains("stacks under header: java  3278 cpu-clock: ×27 (90%)"),
            "{t}"
        );
        // One sample per stack: no "heaviest" stack to name.
        assert!(!t.contains("heaviest"), "{t}");
        all_grounded(&c, &text);
    }

    #[test]
    fn folded_stacks_show_the_heaviest_as_the_line_writes_it() {
        let mut text = String::new();
        for i in 0..20 {
            text.push_str(&format!(
                "java;start_thread;run;work_{i};leaf_{} {}\n",
                i % 4,
                1 + i % 2
            ));
        }
        text.push_str("java;start_thread;run;a;b;check_events_[k];hypercall_page_[k] 19\n");
        let c = stacks(&text, &Query::new("hottest stacks"));
        let t = texts(&c).join("\n");
        assert!(t.contains("heaviest stack (L21): java;start_thread;…;b;check_events_[k];hypercall_page_[k] 19"), "{t}");
        assert!(
            t.contains("top of stack (self): hypercall_page_[k] ×19"),
            "{t}"
        );
        all_grounded(&c, &text);
    }

    #[test]
    fn indented_blocks_that_are_not_stacks_are_left_alone() {
        // `show interfaces`: a header, indented lines with words; YAML; a log.
        let mut text = String::new();
        for i in 0..30 {
            text.push_str(&format!(
                "GigabitEthernet0/{i} is up, line protocol is up\n  Hardware is CSR vNIC, address is 0050.56bf.{i:04x}\n  Internet address is 10.0.{i}.1/24\n  MTU 1500 bytes, BW 1000000 Kbit/sec\n\n"
            ));
        }
        assert!(stacks(&text, &Query::new("which interfaces are up")).is_empty());
        let log: String = (0..100)
            .map(|i| format!("2024-01-01 INFO step {i} done\n"))
            .collect();
        assert!(stacks(&log, &Query::new("what failed")).is_empty());
    }

    #[test]
    fn a_question_word_is_matched_as_a_word_of_the_frame() {
        assert!(holds("zfs`zfs_lookup+0x88", "zfs"));
        assert!(holds("zfs`zfs_lookup+0x88", "zfs_lookup"));
        assert!(!holds(
            "lorg/mozilla/javascript/scriptruntime;.setobjectprop(",
            "top"
        ));
    }

    #[test]
    fn a_thread_dump_counts_threads_per_state_and_top_frame() {
        let mut text = String::from("Full thread dump OpenJDK 64-Bit Server VM:\n\n");
        for i in 0..30 {
            let (state, top) = if i % 3 == 0 {
                (
                    "BLOCKED (on object monitor)",
                    "at com.acme.Cache.put(Cache.java:120)",
                )
            } else {
                (
                    "WAITING (parking)",
                    "at jdk.internal.misc.Unsafe.park(Native Method)",
                )
            };
            text.push_str(&format!(
                "\"worker-{i}\" #{i} prio=5 tid=0x7f{i:04x} nid=0x{i:x} waiting\n   java.lang.Thread.State: {state}\n\t{top}\n\t- waiting to lock <0x000000071a2b3c4d> (a com.acme.Cache)\n\tat java.lang.Thread.run(Thread.java:833)\n\n"
            ));
        }
        let c = stacks(&text, &Query::new("what are the threads blocked on?"));
        let t = texts(&c).join("\n");
        assert!(t.contains("call stacks: ×30 stacks (no count lines"), "{t}");
        assert!(
            t.contains("top of stack (self): at com.acme.Cache.put(Cache.java:120) ×10 (33%)"),
            "{t}"
        );
        assert!(
            t.contains("stacks under header: java.lang.Thread.State: WAITING (parking) ×20 (67%)"),
            "{t}"
        );
        all_grounded(&c, &text);
    }

    #[test]
    fn self_samples_sum_over_a_functions_addresses() {
        // One function sampled at many offsets is the hottest, though no one address is.
        let mut text = String::new();
        for i in 0..30 {
            let leaf = if i % 2 == 0 {
                format!("ngx_http_parse_request_line+0x{:x}", 0x100 + i)
            } else {
                format!("memcpy+0x{:x}", 0x10 + i % 3)
            };
            text.push_str(&format!(
                "nginx 4242 cpu-clock:\n\t    7f1e214c{i:04x} {leaf} (/usr/sbin/nginx)\n\t    7f1e214c0000 main (/usr/sbin/nginx)\n\n"
            ));
        }
        let c = stacks(&text, &Query::new("which function is hottest?"));
        let t = texts(&c).join("\n");
        let first = t.lines().find(|l| l.starts_with("top of stack")).unwrap();
        assert!(first.contains("ngx_http_parse_request_line+0x"), "{t}");
        assert!(
            first.contains("its function at all 15 addresses ×15 (50%)"),
            "{t}"
        );
        assert!(t.contains("memcpy+0x"), "{t}");
        all_grounded(&c, &text);
    }

    #[test]
    fn a_row_of_semicolon_separated_values_is_no_folded_stack() {
        let text: String = (0..40)
            .map(|i| format!("user{i};{};Paris {}\n", 20 + i, 75000 + i))
            .collect();
        assert!(stacks(&text, &Query::new("who lives in Paris?")).is_empty());
    }

    #[test]
    fn a_share_is_all_only_when_it_is_all() {
        assert_eq!(share(10, 10), "×10 (all)");
        assert_eq!(share(999, 1000), "×999 (>99%)");
        assert_eq!(share(1, 1000), "×1 (<1%)");
    }

    proptest::proptest! {
        #[test]
        fn any_text_gives_grounded_facts_or_none(
            text in "([ \t]{0,3}([a-z`+;0-9x_:]{1,12}|at f\\(x\\)|- note)[ ]?[0-9]{0,3}\n){0,200}",
        ) {
            let c = stacks(&text, &Query::new("which function is hottest?"));
            all_grounded(&c, &text);
        }
    }
}
