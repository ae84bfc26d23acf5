//! Cutting a whitespace-aligned table's rows into cells under its header's columns: at the
//! header's offsets when the values are left-aligned under the names, word by word under the
//! name each word stands under when they are not (right-aligned numbers, names of several
//! words), else by whitespace.

use crate::guard::reduce::signals::number;

/// Rows probed to choose a [`Layout`].
const PROBE_ROWS: usize = 40;

/// How a table's rows are cut into cells under its header (chosen by [`layout`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// Values left-aligned under the names (kubectl, systemctl, dpkg): cut at the header's
    /// offsets, so a value may hold spaces (`2 hours ago`).
    Fixed,
    /// Each word of a row goes to the name it stands under: the one its span overlaps most,
    /// else the nearest. For right-aligned numbers beside values of several words (`PHI  954
    /// oe1  glu  60  24.182 … -.11424513E+04` under `Atom  Residue  X  Y  Z  Q  Potential`,
    /// where the atom and residue are two words each).
    Spans,
    /// By whitespace, the last cell taking the rest of the line (ps's `COMMAND`).
    Words,
}

/// How the rows `body` (0-based indices into `lines`) are cut under the header columns
/// `cols` (char offset, name; from [`super::find_header`]):
/// - [`Layout::Fixed`] when each column's first character starts a value in at least 60% of
///   the first [`PROBE_ROWS`] rows;
/// - else [`Layout::Spans`] when most rows have fewer words than columns (an empty cell:
///   lsof's `TID`), or more, and cutting them by span gives more columns that are numbers in
///   80% of the rows than cutting by whitespace does (a value of two words pushed the numbers
///   after it one column right);
/// - else [`Layout::Words`].
pub fn layout(lines: &[&str], body: &[usize], cols: &[(usize, String)]) -> Layout {
    let probe: Vec<&str> = body
        .iter()
        .take(PROBE_ROWS)
        .map(|&i| lines[i].trim_end_matches('\r'))
        .collect();
    let starts = probe
        .iter()
        .filter(|l| {
            let ch: Vec<char> = l.chars().collect();
            cols.iter().skip(1).all(|(s, _)| {
                *s < ch.len() && *s > 0 && ch[s - 1].is_whitespace() && !ch[*s].is_whitespace()
            })
        })
        .count();
    if starts * 10 >= probe.len() * 6 {
        return Layout::Fixed;
    }
    // Rows of as many words as columns cut alike either way.
    let words: Vec<usize> = probe.iter().map(|l| l.split_whitespace().count()).collect();
    let other = words.iter().filter(|&&w| w != cols.len()).count();
    if probe.is_empty() || other * 2 < probe.len() {
        return Layout::Words;
    }
    // Fewer words than columns: a cell is empty (lsof's `TID`, netstat's `State` of a UDP
    // socket), and cutting by whitespace would pull every value after it one column left.
    let fewer = words.iter().filter(|&&w| w < cols.len()).count();
    if fewer * 2 >= probe.len() {
        return Layout::Spans;
    }
    let numeric_columns = |split: &dyn Fn(&str) -> Vec<String>| {
        let cells: Vec<Vec<String>> = probe.iter().map(|l| split(l)).collect();
        (0..cols.len())
            .filter(|&k| {
                let nums = cells
                    .iter()
                    .filter(|c| c.get(k).is_some_and(|v| number(v).is_some()))
                    .count();
                nums * 10 >= cells.len() * 8
            })
            .count()
    };
    let by_span = numeric_columns(&|l| split_spans(l, cols));
    let by_word = numeric_columns(&|l| split_ws(l, cols.len()));
    if by_span > by_word {
        Layout::Spans
    } else {
        Layout::Words
    }
}

/// The cells of one table row under the header columns `cols` (from
/// [`super::find_header`]), cut as `layout` says (see [`layout`]); one cell per column, empty
/// where nothing stands.
pub fn split_row(line: &str, cols: &[(usize, String)], layout: Layout) -> Vec<String> {
    match layout {
        Layout::Fixed => split_fixed(line, cols),
        Layout::Spans => split_spans(line, cols),
        Layout::Words => split_ws(line, cols.len()),
    }
}

fn split_fixed(line: &str, cols: &[(usize, String)]) -> Vec<String> {
    let chars: Vec<char> = line.chars().collect();
    let mut out = Vec::new();
    for (k, (s, _)) in cols.iter().enumerate() {
        let mut s = (*s).min(chars.len());
        // A value that overflowed from the previous column: start after it.
        while k > 0
            && s > 0
            && s < chars.len()
            && !chars[s - 1].is_whitespace()
            && !chars[s].is_whitespace()
        {
            s += 1;
        }
        let e = cols
            .get(k + 1)
            .map_or(chars.len(), |(e, _)| (*e).min(chars.len()))
            .max(s);
        out.push(chars[s..e].iter().collect::<String>().trim().to_string());
    }
    out
}

/// Each word of `line` joined to the cell of the column whose name it overlaps most (chars
/// shared by the word's span and the name's), else of the nearest name; words past the last
/// name go to the last column.
fn split_spans(line: &str, cols: &[(usize, String)]) -> Vec<String> {
    let mut out = vec![String::new(); cols.len()];
    if cols.is_empty() {
        return out;
    }
    let spans: Vec<(usize, usize)> = cols
        .iter()
        .map(|(s, n)| (*s, s + n.chars().count()))
        .collect();
    let mut at = 0;
    for word in line.split(char::is_whitespace) {
        let (ws, we) = (at, at + word.chars().count());
        at = we + 1;
        if word.is_empty() {
            continue;
        }
        let shared = |&(s, e): &(usize, usize)| we.min(e).saturating_sub(ws.max(s));
        let gap = |&(s, e): &(usize, usize)| {
            if we <= s {
                s - we
            } else {
                ws.saturating_sub(e)
            }
        };
        let k = if ws >= spans[spans.len() - 1].0 {
            spans.len() - 1
        } else {
            let best = (0..spans.len()).max_by_key(|&k| (shared(&spans[k]), usize::MAX - k));
            match best {
                Some(k) if shared(&spans[k]) > 0 => k,
                _ => (0..spans.len())
                    .min_by_key(|&k| gap(&spans[k]))
                    .unwrap_or(0),
            }
        };
        if !out[k].is_empty() {
            out[k].push(' ');
        }
        out[k].push_str(word);
    }
    out
}

fn split_ws(line: &str, n: usize) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut rest = line.trim_start();
    while out.len() + 1 < n {
        match rest.find(char::is_whitespace) {
            Some(p) => {
                out.push(rest[..p].to_string());
                rest = rest[p..].trim_start();
            }
            None => break,
        }
    }
    out.push(rest.trim_end().to_string());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cols(header: &str) -> Vec<(usize, String)> {
        let mut out = Vec::new();
        let mut at = 0;
        for w in header.split(' ') {
            if !w.is_empty() {
                out.push((at, w.to_string()));
            }
            at += w.chars().count() + 1;
        }
        out
    }

    #[test]
    fn right_aligned_numbers_beside_names_of_two_words_go_under_their_names() {
        let header = "          Atom    Residue         X       Y       Z       Q      Potential";
        let rows = [
            "PHI       1 n    gly     1      21.421   3.562  16.781   0.294  0.65462601E+02",
            "PHI       2 h1   gly     1      20.981   4.248  17.380   0.164  0.51312817E+02",
            "PHI     954 oe1  glu    60      24.182  12.981  26.689  -0.819  -.11424513E+04",
            "PHI     955 oe2  glu    60      22.937  11.613  27.845  -0.819  -.13329434E+03",
        ];
        let c = cols(header);
        let lines: Vec<&str> = rows.to_vec();
        let body: Vec<usize> = (0..lines.len()).collect();
        assert_eq!(layout(&lines, &body, &c), Layout::Spans);
        let cells = split_row(rows[2], &c, Layout::Spans);
        assert_eq!(
            cells,
            [
                "PHI 954 oe1",
                "glu 60",
                "24.182",
                "12.981",
                "26.689",
                "-0.819",
                "-.11424513E+04"
            ]
        );
        assert_eq!(number(&cells[6]), Some(-1142.4513));
    }

    #[test]
    fn a_command_of_many_words_stays_one_cell_cut_by_whitespace() {
        let header = "USER       PID %CPU %MEM    VSZ   RSS TTY      STAT START   TIME COMMAND";
        let rows = [
            "root         1  0.0  0.1 167636 11520 ?        Ss   Dec04   0:03 /sbin/init splash",
            "root       412  0.3  0.2  49820  9876 ?        Ss   Dec04   1:12 /lib/systemd/systemd-journald",
            "alice     2231  12.5  3.1 912345 256000 pts/0  Sl+  10:02  12:01 python3 train.py --epochs 10",
            "bob       3001  0.0  0.0  10100  3300 pts/1    R+   10:05   0:00 ps aux",
        ];
        let c = cols(header);
        let body: Vec<usize> = (0..rows.len()).collect();
        let l = layout(&rows, &body, &c);
        assert_ne!(l, Layout::Fixed);
        for (row, cmd, cpu) in [
            (0, "/sbin/init splash", "0.0"),
            (2, "python3 train.py --epochs 10", "12.5"),
        ] {
            let cells = split_row(rows[row], &c, l);
            assert_eq!(cells[10], cmd);
            assert_eq!(cells[2], cpu);
        }
    }

    #[test]
    fn an_empty_cell_pulls_no_value_into_the_column_before_it() {
        let header =
            "COMMAND     PID   TID TASKCMD   USER   FD      TYPE             DEVICE  SIZE/OFF     NODE NAME";
        let rows = [
            "systemd       1                 root  cwd       DIR              254,0      4096        2 /",
            "systemd       1                 root  txt       REG              254,0   1589552  1052938 /usr/lib/systemd/systemd",
            "toolsum   23156 23157 toolsum-m root   11u     unix 0x00000000e2006e00       0t0  2002470 /tmp/t.sock type=STREAM (LISTEN)",
            "sshd        812                 root    3u     IPv4              21417       0t0      TCP *:22 (LISTEN)",
        ];
        let c = cols(header);
        let body: Vec<usize> = (0..rows.len()).collect();
        assert_eq!(layout(&rows, &body, &c), Layout::Spans);
        let cells = split_row(rows[1], &c, Layout::Spans);
        assert_eq!(
            &cells[..8],
            ["systemd", "1", "", "", "root", "txt", "REG", "254,0"]
        );
        let cells = split_row(rows[2], &c, Layout::Spans);
        assert_eq!((cells[2].as_str(), cells[6].as_str()), ("23157", "unix"));
    }

    #[test]
    fn left_aligned_values_are_cut_at_the_header_offsets() {
        let header = "NAME        READY   STATUS             RESTARTS   AGE";
        let rows = [
            "web-1       1/1     Running            0          2d",
            "web-2       0/1     CrashLoopBackOff   12         2d",
            "db-0        1/1     Running            1 (3h ago) 5d",
        ];
        let c = cols(header);
        let body: Vec<usize> = (0..rows.len()).collect();
        assert_eq!(layout(&rows, &body, &c), Layout::Fixed);
        assert_eq!(split_row(rows[1], &c, Layout::Fixed)[2], "CrashLoopBackOff");
    }
}
