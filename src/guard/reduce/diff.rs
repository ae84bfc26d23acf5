//! Unified diffs: files changed with added/removed line counts, hunk headers, and changed lines
//! ranked by the intent, each shown with its file. A `git log -p` (diffs under `commit <hash>`
//! headers) is read per commit: each commit's hash, date, subject and files, so that a change
//! is never shown without the commit that made it.

use super::rank::bm25;
use super::text::normalise;
use super::{count, fmt_num, show_line, Ctx, Item, Kind, Reduction, Section, MUST};

mod edits;

/// Priority added to both lines of an edit of its own kind among many alike
/// ([`edits::rare_edits`]): above a hunk header's (30), like a good match to the question.
const RARE_EDIT_PRIO: f64 = 40.0;

/// Priority added to a changed line that defines a function, class or type (`-def
/// url_parse(`, `+pub fn run(`): what a change adds to or takes from an API, which a question
/// about a diff asks first (live set of session 56: `diff -ru` of two releases). Below a rare
/// edit's, above a hunk header's (30) with the base of 5: a good match to the question still
/// outranks an unrelated definition.
const DEFINITION_PRIO: f64 = 26.0;

/// A changed line opening a definition, any indentation, modifiers first: Python's `def` and
/// `class`, Rust's `fn`, `struct`, `enum`, `trait`, `impl`, JavaScript's `function` and
/// `class`, Go's `func` and `type`, Java's and C#'s `interface`, Perl's `sub`.
static DEFINITION: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
    regex::Regex::new(r"^[+-]\s*(?:(?:pub(?:\([\w:]+\))?|export|default|async|static|public|private|protected|abstract|final|override|unsafe|const)\s+)*(?:def|class|fn|function|func|struct|enum|trait|impl|interface|type|sub)\s+[\w$(]")
        .unwrap()
});

/// Files of a diff whose counts are the kind's core (those the question names first, then
/// the most changed); the others' lines rank at [`FILE_PRIO`].
const FILES_CORE: usize = 8;

/// Priority of a file's counts past [`FILES_CORE`]: above a hunk header's (30), below a
/// changed line that matches the question well (up to 55) and the select step's core (50).
const FILE_PRIO: f64 = 40.0;

/// Most files listed in one commit's fact; the rest are counted ("and 9 more files").
const FILES_PER_COMMIT: usize = 5;

/// Most bytes of a commit's subject shown in its fact (a subject line is rarely longer;
/// a longer one is cut after a whole word, marked `…`).
const SUBJECT_BYTES: usize = 100;

/// A commit's subject line, cut after a whole word past [`SUBJECT_BYTES`]: every path and
/// number it shows is whole, as the input has it.
fn subject(line: &str) -> String {
    if line.len() <= SUBJECT_BYTES {
        return line.to_string();
    }
    let head = super::clip_str(line, SUBJECT_BYTES);
    match head.rfind(' ') {
        Some(p) if p > 0 => format!("{}…", &head[..p]),
        _ => format!("{head}…"),
    }
}

/// A file's changes: its header line (0-based), name, lines added and removed, and the
/// commit it belongs to (an index into the commits; `None` outside any). A `--stat` line
/// (`src/x.rs | 42 +++--`) gives its own count of changed lines (`stat`), or `Bin`.
struct FileChange {
    line: usize,
    name: String,
    added: usize,
    removed: usize,
    commit: Option<usize>,
    stat: Option<String>,
}

impl FileChange {
    /// How it changed, as a commit's fact lists it: `+3 -1`, or a stat's `|42` / `|Bin`.
    fn change(&self) -> String {
        match &self.stat {
            Some(n) => format!("|{n}"),
            None => format!("+{} -{}", count(self.added), count(self.removed)),
        }
    }
}

/// What a file the question names adds to its BM25 score: more than any score of words
/// alone (a file name's few words score a few units at most).
const NAMED_FILE: f64 = 100.0;

/// True when the question writes `name` whole, or its last components (`gemini.rs` names
/// `src/hooks/gemini.rs`): a written name with a `.` or `/`, so that a plain word
/// (`hooks`) names no file.
fn names_file(q: &super::rank::Query, name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    q.names.iter().any(|n| {
        (n.contains('.') || n.contains('/'))
            && (name == *n
                || name
                    .strip_suffix(n.as_str())
                    .is_some_and(|head| head.ends_with('/')))
    })
}

/// A `git log --stat` line: ` src/x.rs | 42 +++--` or ` logo.png | Bin 0 -> 1234 bytes`, as
/// its file name and its count (`42`, `Bin`).
fn stat_line(line: &str) -> Option<(&str, &str)> {
    let body = line.strip_prefix(' ')?;
    if body.starts_with(' ') && !body.trim_start().starts_with("...") {
        // Four spaces open a message line; a stat line's name starts at the second column.
        return None;
    }
    let (name, rest) = body.split_once(" | ")?;
    let n = rest.split_whitespace().next()?;
    (n == "Bin" || n.bytes().all(|b| b.is_ascii_digit())).then_some((name.trim(), n))
}

/// True for a `git log` (with or without patches or `--stat`): it opens with a `commit <hash>`
/// line and the head shows another or an `Author:` line.
pub fn looks_like_git_log(nonblank: &[&str]) -> bool {
    nonblank.first().is_some_and(|l| commit_hash(l).is_some())
        && nonblank.iter().take(400).any(|l| l.starts_with("Author: "))
}

/// A `commit <hash>` header of a `git log`: its line (0-based), short hash, date and subject.
struct Commit {
    line: usize,
    hash: String,
    date: String,
    subject: String,
}

/// The hash of a `commit <hash>` line (`commit 1a2b3c4…` with or without decorations such as
/// `(HEAD -> main)`): 7 to 64 hex digits.
fn commit_hash(line: &str) -> Option<&str> {
    let rest = line.strip_prefix("commit ")?;
    let hash = rest.split_whitespace().next()?;
    ((7..=64).contains(&hash.len()) && hash.bytes().all(|b| b.is_ascii_hexdigit())).then_some(hash)
}

/// Reduces a unified diff.
pub fn reduce(text: &str, ctx: &Ctx<'_>) -> Reduction {
    let lines: Vec<&str> = text.split('\n').collect();
    let mut items = Vec::new();
    let mut files: Vec<FileChange> = Vec::new();
    let mut commits: Vec<Commit> = Vec::new();
    let mut hunks: Vec<(usize, Option<usize>)> = Vec::new();
    // Changed lines with the file they belong to (an index into `files`).
    let mut changed: Vec<(usize, Option<usize>)> = Vec::new();
    // Lines of commit messages (below `Date:`), with their commit.
    let mut message: Vec<(usize, usize)> = Vec::new();
    // Inside a commit's header and message, until its first `diff`.
    let mut in_message = false;
    for (i, l) in lines.iter().enumerate() {
        if let Some(hash) = commit_hash(l) {
            commits.push(Commit {
                line: i,
                hash: hash.chars().take(12).collect(),
                date: String::new(),
                subject: String::new(),
            });
            in_message = true;
            continue;
        }
        if in_message {
            let c = commits.last_mut().expect("a commit opened the message");
            if let Some(d) = l.strip_prefix("Date:") {
                c.date = d.trim().to_string();
            } else if let Some((name, n)) = stat_line(l) {
                files.push(FileChange {
                    line: i,
                    name: name.to_string(),
                    added: 0,
                    removed: 0,
                    commit: Some(commits.len() - 1),
                    stat: Some(n.to_string()),
                });
                message.push((i, commits.len() - 1));
            } else if l.starts_with(' ') && !l.trim().is_empty() {
                if c.subject.is_empty() && l.starts_with("    ") {
                    c.subject = subject(l.trim());
                }
                message.push((i, commits.len() - 1));
            }
            if !l.starts_with("diff ") {
                continue;
            }
            in_message = false;
        }
        let commit = commits.len().checked_sub(1);
        if let Some(rest) = l.strip_prefix("diff --git ") {
            // `git log -p --stat`: the patches say what the stat lines did, counted again.
            if commit.is_some() && files.last().is_some_and(|f| f.stat.is_some()) {
                files.retain(|f| f.commit != commit || f.stat.is_none());
            }
            let name = rest.rsplit(" b/").next().unwrap_or(rest).to_string();
            files.push(FileChange {
                line: i,
                name,
                added: 0,
                removed: 0,
                commit,
                stat: None,
            });
        } else if let Some(rest) = l.strip_prefix("+++ ") {
            // `diff -u` writes the file's time after a tab (`+++ b/x.py\t2026-12-06 03:59:01…`).
            let rest = rest.split('\t').next().unwrap_or(rest);
            let name = rest.trim_start_matches("b/").to_string();
            // A `diff --git` header already named this file unless it has changes recorded.
            if files
                .last()
                .is_none_or(|f| f.added + f.removed != 0 || f.stat.is_some())
            {
                files.push(FileChange {
                    line: i,
                    name,
                    added: 0,
                    removed: 0,
                    commit,
                    stat: None,
                });
            }
        } else if l.starts_with("@@") {
            hunks.push((i, files.len().checked_sub(1)));
        } else if l.starts_with('+') && !l.starts_with("+++") {
            if let Some(f) = files.last_mut() {
                f.added += 1;
            }
            changed.push((i, files.len().checked_sub(1)));
        } else if l.starts_with('-') && !l.starts_with("---") {
            if let Some(f) = files.last_mut() {
                f.removed += 1;
            }
            changed.push((i, files.len().checked_sub(1)));
        }
    }
    let add: usize = files.iter().map(|f| f.added).sum();
    let del: usize = files.iter().map(|f| f.removed).sum();
    let mut distinct: Vec<&str> = files.iter().map(|f| f.name.as_str()).collect();
    distinct.sort_unstable();
    distinct.dedup();
    let log = commits.len() >= 2 || (commits.len() == 1 && commits[0].line == 0);
    let n_lines = fmt_num(lines.len() - usize::from(text.ends_with('\n')));
    let totals = format!(
        "lines added: {}, removed: {}; hunks: {}",
        count(add),
        count(del),
        count(hunks.len())
    );
    let status;
    // How well each file's name matches the question. A file the question names whole
    // (`src/hooks/gemini.rs`, or `gemini.rs`) is its subject, above any file sharing a word
    // with it (`src/hooks/install.rs`).
    let names: Vec<&str> = files.iter().map(|f| f.name.as_str()).collect();
    let mut file_rel = bm25(ctx.query, &names);
    let named: Vec<bool> = names.iter().map(|n| names_file(ctx.query, n)).collect();
    for (r, &n) in file_rel.iter_mut().zip(&named) {
        if n {
            *r += NAMED_FILE;
        }
    }
    if log {
        let patches = !hunks.is_empty();
        let what = if patches {
            "git log with patches"
        } else if files.is_empty() {
            "git log"
        } else {
            "git log with --stat"
        };
        let changes = if files.is_empty() {
            String::new()
        } else {
            format!(
                "; file changes: {} ({} distinct files)",
                count(files.len()),
                count(distinct.len())
            )
        };
        let lines_changed = if patches {
            format!("; {totals}")
        } else {
            String::new()
        };
        items.push(Item::fact(
            1,
            format!(
                "kind: {what}; {n_lines} lines; commits: {}{changes}{lines_changed}",
                count(commits.len()),
            ),
            MUST,
        ));
        let mut changed_files = String::new();
        if !files.is_empty() {
            changed_files = format!(
                ": {} file changes to {} distinct files",
                count(files.len()),
                count(distinct.len())
            );
        }
        if patches {
            changed_files += &format!(", lines added {}, removed {}", count(add), count(del));
        }
        status = format!(
            "{what} of {} commits, newest first as listed ({} first, {} last){changed_files}.",
            count(commits.len()),
            commits[0].hash,
            commits[commits.len() - 1].hash,
        );
        // One fact per commit: what it is and which files it changed, those the question's
        // words match first. The commits it matches (subject or any file's name, shown or
        // not) first, then in the log's order.
        let mut docs: Vec<String> = Vec::with_capacity(commits.len());
        let texts: Vec<String> = commits
            .iter()
            .enumerate()
            .map(|(k, c)| {
                let mut mine: Vec<usize> = (0..files.len())
                    .filter(|&f| files[f].commit == Some(k))
                    .collect();
                mine.sort_by(|&a, &b| file_rel[b].total_cmp(&file_rel[a]).then(a.cmp(&b)));
                let mut doc = c.subject.clone();
                for &f in &mine {
                    doc.push(' ');
                    doc.push_str(&files[f].name);
                }
                docs.push(doc);
                let mut shown: Vec<String> = mine
                    .iter()
                    .take(FILES_PER_COMMIT)
                    .map(|&f| format!("{} {}", files[f].name, files[f].change()))
                    .collect();
                if mine.len() > FILES_PER_COMMIT {
                    shown.push(format!(
                        "and {} more files",
                        count(mine.len() - FILES_PER_COMMIT)
                    ));
                }
                let files = if shown.is_empty() {
                    String::new()
                } else {
                    format!(" (files: {})", shown.join(", "))
                };
                let date = if c.date.is_empty() {
                    String::new()
                } else {
                    format!(", {}", c.date)
                };
                format!("commit {}{date}: {}{files}", c.hash, c.subject)
            })
            .collect();
        let mut rel = normalise(&bm25(ctx.query, &docs));
        for (k, r) in rel.iter_mut().enumerate() {
            if (0..files.len()).any(|f| files[f].commit == Some(k) && named[f]) {
                *r += 1.0;
            }
        }
        for (k, (c, t)) in commits.iter().zip(texts).enumerate() {
            items.push(Item {
                section: Section::KeyFacts,
                order: 2 + k,
                line: Some(c.line + 1),
                text: t,
                prio: MUST / 100.0 + 1000.0 * rel[k] - k as f64,
            });
        }
    } else {
        items.push(Item::fact(
            1,
            format!(
                "kind: diff; {n_lines} lines; files changed: {}; {totals}",
                count(files.len()),
            ),
            MUST,
        ));
        status = format!(
            "Diff of {} files: lines added {}, removed {}, in {} hunks.",
            count(files.len()),
            count(add),
            count(del),
            count(hunks.len())
        );
        // Each file's counts, in the diff's order. The files the question names and those
        // changed most are the kind's core; past [`FILES_CORE`] a file's line competes with
        // the changed lines (21 files of `diff -ru` had taken the core's whole share, and the
        // definitions a question about the change asked for were left out; live set of
        // session 56).
        let mut by_weight: Vec<usize> = (0..files.len()).collect();
        by_weight.sort_by(|&a, &b| {
            file_rel[b]
                .total_cmp(&file_rel[a])
                .then((files[b].added + files[b].removed).cmp(&(files[a].added + files[a].removed)))
                .then(a.cmp(&b))
        });
        let mut rank = vec![0; files.len()];
        for (r, &f) in by_weight.iter().enumerate() {
            rank[f] = r;
        }
        for (k, f) in files.iter().enumerate() {
            let prio = if rank[k] < FILES_CORE {
                MUST / 100.0 - k as f64
            } else {
                FILE_PRIO - rank[k] as f64 * 0.01
            };
            items.push(Item {
                section: Section::KeyFacts,
                order: 10 + k,
                line: Some(f.line + 1),
                text: format!(
                    "{}: lines added {}, removed {}",
                    f.name,
                    count(f.added),
                    count(f.removed)
                ),
                prio,
            });
        }
    }
    // A hunk or changed line says which file (and commit) it is in, when there are several.
    let several = files.len() > 1;
    let whose = |f: Option<usize>| -> String {
        match f.map(|f| &files[f]) {
            Some(f) if several => match f.commit.filter(|_| log) {
                Some(c) => format!("[{} @ {}] ", f.name, commits[c].hash),
                None => format!("[{}] ", f.name),
            },
            _ => String::new(),
        }
    };
    for &(i, f) in &hunks {
        items.push(Item::line(
            Section::Evidence,
            i + 1,
            format!("{}{}", whose(f), show_line(lines[i])),
            30.0,
        ));
    }
    let docs: Vec<&str> = changed.iter().map(|&(i, _)| lines[i]).collect();
    let scores = normalise(&bm25(ctx.query, &docs));
    let at: Vec<usize> = changed.iter().map(|&(i, _)| i).collect();
    let rare = edits::rare_edits(&lines, &at);
    for (k, &(i, f)) in changed.iter().enumerate() {
        let odd = if rare.contains(&i) {
            RARE_EDIT_PRIO
        } else if DEFINITION.is_match(lines[i]) {
            DEFINITION_PRIO
        } else {
            0.0
        };
        items.push(Item::line(
            Section::Evidence,
            i + 1,
            format!("{}{}", whose(f), show_line(lines[i])),
            5.0 + 50.0 * scores[k] + odd - k as f64 * 0.001,
        ));
    }
    // A commit message's lines, each with its commit (a message says why, its diff what).
    let docs: Vec<&str> = message.iter().map(|&(i, _)| lines[i]).collect();
    let scores = normalise(&bm25(ctx.query, &docs));
    for (k, &(i, c)) in message.iter().enumerate() {
        items.push(Item::line(
            Section::Evidence,
            i + 1,
            format!(
                "[commit {}] {}",
                commits[c].hash,
                show_line(lines[i].trim())
            ),
            3.0 + 40.0 * scores[k] - k as f64 * 0.001,
        ));
    }
    Reduction {
        kind: Kind::Diff,
        items,
        status,
        failed: None,
        next_action: if log && !hunks.is_empty() {
            "Read a commit's patch at its L<n> in the saved file (its files' hunks follow it)."
                .to_string()
        } else if log {
            // `--stat` or no patches at all: a commit's lines are all there is to read.
            "Read a commit at its L<n> in the saved file (the output holds no patches).".to_string()
        } else {
            "Read the hunks of the file you need at their L<n> in the saved file.".to_string()
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::guard::reduce::rank::Query;

    #[test]
    fn counts_changes() {
        let d =
            "diff --git a/x.rs b/x.rs\n--- a/x.rs\n+++ b/x.rs\n@@ -1,2 +1,2 @@\n-old\n+new\n ctx\n";
        let q = Query::new("");
        let r = reduce(
            d,
            &Ctx {
                query: &q,
                exit_code: None,
                bytes: 0,
            },
        );
        assert!(r
            .items
            .iter()
            .any(|i| i.text == "x.rs: lines added 1, removed 1"));
        assert!(r.status.contains("1 files"));
        // 7 lines, as `wc -l` and the summary's `shown: … of 7 lines` count them.
        assert!(
            r.items
                .iter()
                .any(|i| i.text.starts_with("kind: diff; 7 lines;")),
            "{:?}",
            r.items
        );
    }

    #[test]
    fn many_files_leave_the_core_to_the_named_and_largest_and_definitions_rank() {
        // Twelve files and one the question names: that one and the seven most changed are
        // the core; a removed definition outranks a removed line of the same file.
        let mut d = String::new();
        for k in 0..12 {
            d += &format!(
                "diff -ru a/f{k}.py b/f{k}.py\n--- a/f{k}.py\n+++ b/f{k}.py\n@@ -1 +1 @@\n"
            );
            for _ in 0..=k {
                d += "-    x = 1\n";
            }
        }
        d += "diff -ru a/urls.py b/urls.py\n--- a/urls.py\n+++ b/urls.py\n@@ -1,3 +1 @@\n-def url_parse(s):\n-    return s\n";
        let q = Query::new("what changed in urls.py");
        let r = reduce(
            &d,
            &Ctx {
                query: &q,
                exit_code: None,
                bytes: 0,
            },
        );
        let prio = |t: &str| {
            r.items
                .iter()
                .find(|i| i.text.contains(t))
                .map(|i| i.prio)
                .unwrap_or_else(|| panic!("{t} in {:?}", r.items))
        };
        assert!(prio("urls.py: lines added") >= MUST / 200.0);
        assert!(prio("f11.py: lines added") >= MUST / 200.0);
        assert!(prio("f0.py: lines added") < KIND_CORE);
        assert!(prio("f5.py: lines added") >= MUST / 200.0);
        assert!(prio("f4.py: lines added") < KIND_CORE);
        assert!(prio("-def url_parse(s):") > prio("return s"));
    }

    /// The select step's core priority for a format-specific reducer (select.rs).
    const KIND_CORE: f64 = 50.0;

    #[test]
    fn a_diff_u_file_is_named_without_its_time() {
        let d = "diff -ru a/_policybase.py b/_policybase.py\n--- a/_policybase.py\t2026-12-06 03:59:01.83 +0000\n+++ b/_policybase.py\t2026-12-06 03:59:01.83 +0000\n@@ -1,2 +1,2 @@\n-    max_line_length = 78\n+    max_line_length = 998\n ctx\n";
        let q = Query::new("");
        let ctx = Ctx {
            query: &q,
            exit_code: None,
            bytes: 0,
        };
        let r = reduce(d, &ctx);
        assert!(
            r.items
                .iter()
                .any(|i| i.text == "_policybase.py: lines added 1, removed 1"),
            "{:?}",
            r.items
        );
    }

    #[test]
    fn a_git_log_is_read_per_commit() {
        let log = r#"commit 1111111aaaaaaa2222222bbbbbbb3333333ccccc (HEAD -> main)
Author: A <a@example.org>
Date:   Sat Dec 5 19:13:06 2026 +0000

    Fix the parser's error on empty input

    The daemon refused the request before.

diff --git a/src/parse.rs b/src/parse.rs
--- a/src/parse.rs
+++ b/src/parse.rs
@@ -1,2 +1,2 @@
-    return Err(Empty);
+    return Ok(None);
commit 4444444ddddddd5555555eeeeeee6666666fffff
Author: B <b@example.org>
Date:   Fri Dec 4 10:00:00 2026 +0000

    Add the README

diff --git a/README.md b/README.md
--- a/README.md
+++ b/README.md
@@ -0,0 +1 @@
+# parse
"#;
        let q = Query::new("which commit fixed the parser");
        let r = reduce(
            log,
            &Ctx {
                query: &q,
                exit_code: None,
                bytes: 0,
            },
        );
        let texts: Vec<&str> = r.items.iter().map(|i| i.text.as_str()).collect();
        // Each commit: its hash, date, subject and the files it changed, at its line.
        let first = r
            .items
            .iter()
            .find(|i| i.text.starts_with("commit 1111111aaaaa"))
            .unwrap();
        assert_eq!(first.line, Some(1));
        assert_eq!(
            first.text,
            "commit 1111111aaaaa, Sat Dec 5 19:13:06 2026 +0000: Fix the parser's error on empty input (files: src/parse.rs +1 -1)"
        );
        // The commit the question names ranks first.
        let second = r
            .items
            .iter()
            .find(|i| i.text.starts_with("commit 4444444dddd"))
            .unwrap();
        assert!(first.prio > second.prio);
        assert!(
            second.text.ends_with("(files: README.md +1 -0)"),
            "{}",
            second.text
        );
        // A changed line says its file and commit; a message line its commit.
        assert!(
            texts.contains(&"[src/parse.rs @ 1111111aaaaa] +  return Ok(None);"),
            "{texts:?}"
        );
        assert!(texts.contains(&"[commit 1111111aaaaa] The daemon refused the request before."));
        assert!(
            r.status.starts_with("git log with patches of 2 commits"),
            "{}",
            r.status
        );
        assert!(texts
            .iter()
            .any(|t| t.contains("file changes: 2 (2 distinct files)")));
    }

    #[test]
    fn a_git_log_with_stat_lists_each_commits_files() {
        let log = r#"commit 8718c88aaaaaaa2222222bbbbbbb3333333ccccc
Author: A <a@example.org>
Date:   Sat Dec 5 19:13:06 2026 +0000

    hooks: Gemini's reason names the error

 src/hooks/gemini.rs | 42 +++++++++++++++---------
 logo.png            | Bin 0 -> 1234 bytes
 2 files changed, 30 insertions(+), 12 deletions(-)

commit 4444444ddddddd5555555eeeeeee6666666fffff
Author: B <b@example.org>
Date:   Fri Dec 4 10:00:00 2026 +0000

    Add the README

 README.md | 1 +
 1 file changed, 1 insertion(+)
"#;
        let nonblank: Vec<&str> = log.lines().filter(|l| !l.trim().is_empty()).collect();
        assert!(looks_like_git_log(&nonblank));
        assert_eq!(super::super::detect(log), Kind::Diff);
        let q = Query::new("which commits changed src/hooks/gemini.rs?");
        let r = reduce(
            log,
            &Ctx {
                query: &q,
                exit_code: None,
                bytes: 0,
            },
        );
        let texts: Vec<&str> = r.items.iter().map(|i| i.text.as_str()).collect();
        assert!(texts.contains(&"commit 8718c88aaaaa, Sat Dec 5 19:13:06 2026 +0000: hooks: Gemini's reason names the error (files: src/hooks/gemini.rs |42, logo.png |Bin)"), "{texts:?}");
        assert!(
            texts.contains(
                &"[commit 8718c88aaaaa] src/hooks/gemini.rs | 42 +++++++++++++++---------"
            ),
            "{texts:?}"
        );
        assert!(
            r.status.starts_with("git log with --stat of 2 commits"),
            "{}",
            r.status
        );
        assert_eq!(r.failed, None);
        // No patch to point at: the next step says what there is to read.
        assert!(
            r.next_action.contains("holds no patches"),
            "{}",
            r.next_action
        );
    }

    #[test]
    fn a_long_subject_is_cut_after_a_word() {
        let s = subject(&format!(
            "{}/usr/lib/x86_64-linux-gnu/libfoo.so.1",
            "word ".repeat(19)
        ));
        assert!(s.ends_with("word…"), "{s}");
        assert!(s.len() <= SUBJECT_BYTES + '…'.len_utf8());
    }
}
