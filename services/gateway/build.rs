//! Embeds the web client (`web/app/`) in the gateway: writes a table of every file — its
//! path, bytes (`include_bytes!`), content type and a content-hash ETag — to
//! `$OUT_DIR/web_assets.rs`, which `src/web.rs` serves. No Node.js is involved: the client
//! is plain JavaScript modules, CSS and SVG, shipped as written.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

fn main() {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets it"));
    let root = manifest.join("../../web/app");
    println!("cargo:rerun-if-changed={}", root.display());
    let mut files = Vec::new();
    collect(&root, &root, &mut files);
    files.sort();
    let mut table =
        String::from("/// Every file of `web/app/`, by path.\npub static ASSETS: &[Asset] = &[\n");
    for (rel, abs) in &files {
        let bytes = std::fs::read(abs).expect("a web file is readable");
        let etag = format!("\"{:016x}-{:x}\"", fnv1a(&bytes), bytes.len());
        writeln!(
            table,
            "    Asset {{ path: {rel:?}, body: include_bytes!({abs:?}), content_type: {ct:?}, etag: {etag:?} }},",
            abs = abs.display().to_string(),
            ct = content_type(rel),
        )
        .expect("writing to a String");
    }
    table.push_str("];\n");
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets it"));
    std::fs::write(out.join("web_assets.rs"), table).expect("OUT_DIR is writable");
}

/// Every file under `dir`, as (path relative to `root` with `/`, absolute path).
fn collect(root: &Path, dir: &Path, out: &mut Vec<(String, PathBuf)>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        panic!("web client folder {} is missing", dir.display());
    };
    for entry in entries {
        let path = entry.expect("a readable folder entry").path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if name.starts_with('.') {
            continue;
        }
        if path.is_dir() {
            collect(root, &path, out);
        } else {
            let rel = path
                .strip_prefix(root)
                .expect("under the root")
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect::<Vec<_>>()
                .join("/");
            let abs = path.canonicalize().expect("an existing file");
            out.push((rel, abs));
        }
    }
}

fn content_type(path: &str) -> &'static str {
    match path.rsplit('.').next().unwrap_or("") {
        "html" => "text/html; charset=utf-8",
        "js" | "mjs" => "text/javascript; charset=utf-8",
        "css" => "text/css; charset=utf-8",
        "svg" => "image/svg+xml",
        "png" => "image/png",
        "json" => "application/json",
        "txt" | "md" => "text/plain; charset=utf-8",
        "ico" => "image/x-icon",
        "webmanifest" => "application/manifest+json",
        _ => "application/octet-stream",
    }
}

/// FNV-1a, 64 bits: enough to tell two versions of one file apart for an ETag.
fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}
