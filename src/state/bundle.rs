//! A rendered bundle on disk: written into the stack's bundle folder (each file replaced atomically).
//! Rendering itself is pure (`exectl_core::render`); its record is read back by `record`.

use anyhow::{Context, Result};
use exectl_core::render::{Bundle, ALL_PATHS};
use std::path::Path;

/// Write every file into `dir` (each replaced atomically, with its mode) and remove bundle files a
/// previous render left that this one no longer has (e.g. nginx.conf after switching ha → single).
pub fn write(bundle: &Bundle, dir: &Path) -> Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    for f in &bundle.files {
        crate::shell::atomic::write(&dir.join(f.path), &f.bytes, f.mode)?;
    }
    for stale in ALL_PATHS.iter().filter(|p| bundle.get(p).is_none()) {
        let p = dir.join(stale);
        if p.exists() {
            std::fs::remove_file(&p).with_context(|| format!("removing {}", p.display()))?;
        }
    }
    Ok(())
}
