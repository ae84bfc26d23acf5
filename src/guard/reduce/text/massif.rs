//! Valgrind massif's report as `ms_print` writes it: a graph whose top is the peak, a table of
//! snapshots, and an allocation tree under each detailed one. "What is the peak heap usage and
//! which call paths account for most of it" is answered by three places among thousands of
//! tree lines: the `44 (peak)` in the detailed snapshots' list, that snapshot's row, and the
//! top of its tree (blind sets of session 51: an `ms_print` report in each, 1/5 kept in both).

use regex::Regex;
use std::sync::LazyLock;

use crate::guard::reduce::{Item, Section, MUST};

/// The list of detailed snapshots, with the peak's marked: `Detailed snapshots: [5, 9, 44
/// (peak), 47]`.
static PEAK: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^\s*Detailed snapshots: \[.*?\b(\d+) \(peak\)").unwrap());
/// `Number of snapshots: 54`.
static COUNT: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^\s*Number of snapshots: (\d+)").unwrap());
/// The graph's top: the peak's size on the y axis (`28.07^`), its unit on the line above.
static TOP: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"^\s*(\d+(?:\.\d+)?)\^").unwrap());
/// An allocation tree's entry: `| | ->18.00% (5,258,400B) 0x49E5A45: xmlSAX2StartElementNs
/// (in …)`; what precedes `->` gives its depth (two columns a level).
static ENTRY: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^([| ]*)->\d+\.\d+% \([\d,]+B\) (?:0x[0-9A-Fa-f]+: (\S+))?").unwrap()
});

/// `line` trimmed, its runs of spaces cut to two: a table row's padding costs tokens and
/// says nothing.
fn spaced(line: &str) -> String {
    let mut out = String::new();
    for (k, w) in line.split_whitespace().enumerate() {
        if k > 0 {
            out.push_str("  ");
        }
        out.push_str(w);
    }
    out
}

/// Most first-named frames shown from the peak's tree.
const MAX_SITES: usize = 4;
/// Most top-level entries shown from it.
const MAX_TOP: usize = 1;

/// The items that answer where the peak is: a fact naming the peak snapshot, the count and
/// the graph's top; the snapshot table's header and the peak's row; the tree's first line,
/// its top-level entries (at most [`MAX_TOP`]) and, on each call path, the first frame that
/// names a function (the allocating code, at most [`MAX_SITES`], largest first). Empty when
/// `lines` holds no `ms_print` report.
pub fn peak(lines: &[&str]) -> Vec<Item> {
    let mut out = Vec::new();
    let Some((pl, p)) = lines
        .iter()
        .enumerate()
        .find_map(|(i, l)| PEAK.captures(l).map(|c| (i, c[1].to_string())))
    else {
        return out;
    };
    let row_re = Regex::new(&format!(r"^\s*{p}\s+[\d,]+\s+[\d,]+\s")).expect("digits");
    let Some(row) = (pl..lines.len()).find(|&i| row_re.is_match(lines[i])) else {
        return out;
    };
    let count = lines[..pl]
        .iter()
        .rev()
        .find_map(|l| COUNT.captures(l).map(|c| c[1].to_string()));
    let top = lines[..pl].iter().enumerate().find_map(|(i, l)| {
        let v = TOP.captures(l)?.get(1)?.as_str().to_string();
        let unit = i.checked_sub(1).map_or("", |k| lines[k].trim());
        Some(format!("{v}^ {unit}").trim_end().to_string())
    });
    let mut fact = format!("peak: snapshot {p} (peak)");
    if let Some(n) = count {
        fact.push_str(&format!(" of {n} snapshots"));
    }
    if let Some(t) = top {
        fact.push_str(&format!("; the graph's top: {t}"));
    }
    fact.push_str(&format!("; its row L{} and allocation tree below", row + 1));
    out.push(Item::fact(0, fact, MUST));
    // The table's header: the last line naming `total(B)` above the row.
    if let Some(h) = (0..row).rev().find(|&i| lines[i].contains("total(B)")) {
        out.push(Item::line(
            Section::Evidence,
            h + 1,
            spaced(lines[h]),
            MUST / 10.0,
        ));
    }
    out.push(Item::line(
        Section::Evidence,
        row + 1,
        spaced(lines[row]),
        MUST,
    ));
    // The tree: from the row's next line to the first line that is neither an entry nor its
    // indentation.
    let mut named_above: Vec<bool> = Vec::new();
    let (mut sites, mut tops) = (0, 0);
    for (i, &l) in lines.iter().enumerate().skip(row + 1) {
        if i == row + 1 {
            if l.contains("(heap allocation functions)") {
                out.push(Item::line(
                    Section::Evidence,
                    i + 1,
                    l.trim_end(),
                    MUST / 10.0,
                ));
                continue;
            }
            break;
        }
        let Some(c) = ENTRY.captures(l) else {
            if l.trim_start_matches(['|', ' ']).is_empty() {
                continue;
            }
            break;
        };
        let depth = c[1].len() / 2;
        named_above.truncate(depth);
        // `in 12 places, below massif's threshold`: no frame of its own.
        let Some(name) = c.get(2).map(|m| m.as_str()) else {
            continue;
        };
        let named = !matches!(name, "???" | "(below");
        let first_named = named && !named_above.iter().any(|&b| b);
        named_above.push(named);
        // Always shown: they are what the report is read for, and few.
        let prio = MUST;
        if depth == 0 && tops < MAX_TOP {
            tops += 1;
            out.push(Item::line(Section::Evidence, i + 1, l.trim_end(), prio));
        } else if first_named && sites < MAX_SITES {
            sites += 1;
            out.push(Item::line(Section::Evidence, i + 1, l.trim_end(), prio));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_peak_its_row_and_its_allocating_frames() {
        let text = "    MB\n28.07^      #\n     |     @#\n   0 +------>Mi\n\nNumber of snapshots: 54\n Detailed snapshots: [5, 9, 44 (peak), 47]\n\n  n        time(i)         total(B)   useful-heap(B) extra-heap(B)    stacks(B)\n  43    250,000,000       28,000,000       24,000,000     4,000,000            0\n  44    256,934,039       29,209,120       25,452,346     3,756,774            0\n87.14% (25,452,346B) (heap allocation functions) malloc/new/new[], --alloc-fns, etc.\n->85.22% (24,890,932B) 0x10EA48: ??? (in /usr/bin/xmlstarlet)\n| ->50.99% (14,894,760B) 0x49E26BD: ??? (in libxml2.so)\n| | ->18.00% (5,258,400B) 0x49E28D7: ??? (in libxml2.so)\n| | | ->18.00% (5,258,400B) 0x49E5A45: xmlSAX2StartElementNs (in libxml2.so)\n| | |   ->18.00% (5,258,400B) 0x4909587: xmlParseElement (in libxml2.so)\n| | |     \n| | ->17.17% (5,014,800B) 0x49E3759: xmlSAX2Characters (in libxml2.so)\n| | | ->17.17% (5,014,800B) 0x4909587: xmlParseElement (in libxml2.so)\n| | |   \n->01.92% (561,414B) in 12 places, below massif's threshold (1.00%)\n\n--------------------------------------------------------------------------------\n  45    260,000,000       28,500,000       24,800,000     3,700,000            0\n";
        let lines: Vec<&str> = text.lines().collect();
        let items = peak(&lines);
        assert_eq!(
            items[0].text,
            "peak: snapshot 44 (peak) of 54 snapshots; the graph's top: 28.07^ MB; its row L11 and allocation tree below"
        );
        let shown: Vec<usize> = items[1..].iter().map(|i| i.line.unwrap()).collect();
        // Header, row, the tree's first line, the top entry, then each path's first named
        // frame (not xmlParseElement, a caller of one already named).
        assert_eq!(shown, vec![9, 11, 12, 13, 16, 19], "{items:?}");
        assert!(peak(&lines[..6]).is_empty());
    }
}
