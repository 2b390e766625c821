//! The shop's pages as they are uploaded: the files of `shop/` with each page's shared head
//! and layout included from `shop/_layout/` by [`app::layout`], the one expansion the sale
//! page's renderer uses too. The runner uploads this site to the emulator's bucket at start
//! ([`crate::pages::Pages::upload`]) and `local-cloud pages --out DIR` writes it to a folder
//! for `infra/deploy-pages.sh` to sync to the stack's bucket: one expansion for both, and no
//! network or tool of its own.
//!
//! `_layout/` and `templates/` (the sale page's template, which the page writer renders with
//! the same layout, see `shared/src/seckill/sale/page.rs`) are sources, never uploaded.
//! Files other than `.html` are uploaded as they are; a page that does not expand (an
//! unknown partial or parameter, a malformed include) is an error, never uploaded as it is.

use anyhow::Context as _;
use app::layout::expand;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::pages::content_type;

pub use app::layout::LAYOUT;
/// The sale page's template (rendered by the page writer, not a page).
pub const TEMPLATES: &str = "templates";

/// A file of the site: its key under `shop/` (`/`-separated), content type and bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SiteFile {
    pub key: String,
    pub content_type: &'static str,
    pub body: Vec<u8>,
}

/// The site of the pages' folder `dir`: every file but the sources, pages expanded, sorted by
/// key.
pub fn site(dir: &Path) -> anyhow::Result<Vec<SiteFile>> {
    let partials = partials(&dir.join(LAYOUT))?;
    let mut files = Vec::new();
    collect(dir, dir, &mut files)
        .with_context(|| format!("failed to read the pages in {}", dir.display()))?;
    files.sort_by(|a, b| a.1.cmp(&b.1));
    let mut site = Vec::with_capacity(files.len());
    for (path, key) in files {
        let body =
            std::fs::read(&path).with_context(|| format!("failed to read {}", path.display()))?;
        let body = if path.extension().is_some_and(|ext| ext == "html") {
            let source = String::from_utf8(body)
                .with_context(|| format!("{} is not UTF-8", path.display()))?;
            expand(&key, &source, &partials)?.into_bytes()
        } else {
            body
        };
        site.push(SiteFile {
            content_type: content_type(&path),
            key,
            body,
        });
    }
    Ok(site)
}

/// Writes the site of `dir` into `out` (created if need be; an error if it holds anything,
/// which a sync would upload too), each file at its key; answers how many files.
pub fn write_site(dir: &Path, out: &Path) -> anyhow::Result<usize> {
    let site = site(dir)?;
    if out.is_dir()
        && std::fs::read_dir(out)
            .with_context(|| format!("failed to read {}", out.display()))?
            .next()
            .is_some()
    {
        anyhow::bail!(
            "{} is not empty: the site goes to a folder of its own",
            out.display()
        );
    }
    for file in &site {
        let path = out.join(&file.key);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("failed to create {}", parent.display()))?;
        }
        std::fs::write(&path, &file.body)
            .with_context(|| format!("failed to write {}", path.display()))?;
    }
    Ok(site.len())
}

/// The partials in `dir`, by name (the file's stem); none when there is no such folder.
fn partials(dir: &Path) -> anyhow::Result<BTreeMap<String, String>> {
    let mut partials = BTreeMap::new();
    if !dir.is_dir() {
        return Ok(partials);
    }
    for entry in
        std::fs::read_dir(dir).with_context(|| format!("failed to read {}", dir.display()))?
    {
        let path = entry?.path();
        let Some(name) = path
            .file_name()
            .and_then(|name| name.to_str())
            .and_then(|name| name.strip_suffix(".html"))
        else {
            anyhow::bail!("{}: a partial is an .html file", path.display());
        };
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("failed to read {}", path.display()))?;
        partials.insert(name.to_owned(), text);
    }
    Ok(partials)
}

/// The files under `dir`, with their paths relative to `root` (`/`-separated), but the
/// sources ([`LAYOUT`], [`TEMPLATES`]) at the top.
fn collect(root: &Path, dir: &Path, files: &mut Vec<(PathBuf, String)>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        let relative = path
            .strip_prefix(root)
            .expect("under the root")
            .to_string_lossy()
            .replace('\\', "/");
        if path.is_dir() {
            if relative != LAYOUT && relative != TEMPLATES {
                collect(root, &path, files)?;
            }
        } else {
            files.push((path, relative));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_site_is_every_file_but_the_sources_with_its_pages_expanded() {
        let dir = std::env::temp_dir().join(format!("layout-{}", uuid::Uuid::new_v4().simple()));
        for sub in [LAYOUT, TEMPLATES, "img"] {
            std::fs::create_dir_all(dir.join(sub)).unwrap();
        }
        std::fs::write(dir.join("_layout/foot.html"), "</html>\n").unwrap();
        std::fs::write(dir.join("templates/sale.html"), "{{title}}").unwrap();
        std::fs::write(dir.join("index.html"), "<p>\n<!-- include foot -->\n").unwrap();
        std::fs::write(dir.join("img/logo.svg"), "<svg/>").unwrap();
        let site = site(&dir).unwrap();
        let out = dir.join("out");
        std::fs::create_dir_all(&out).unwrap();
        let written = write_site(&dir, &out).unwrap();
        let again = write_site(&dir, &out);
        let index = std::fs::read_to_string(out.join("index.html")).unwrap();
        let logo = out.join("img/logo.svg").is_file();
        std::fs::write(dir.join("broken.html"), "<!-- include header -->\n").unwrap();
        let broken = super::site(&dir);
        std::fs::remove_dir_all(&dir).unwrap();

        let keys: Vec<(&str, &str)> = site
            .iter()
            .map(|file| (file.key.as_str(), file.content_type))
            .collect();
        assert_eq!(
            keys,
            [
                ("img/logo.svg", "image/svg+xml"),
                ("index.html", "text/html; charset=utf-8")
            ]
        );
        assert_eq!(site[1].body, b"<p>\n</html>\n");
        assert_eq!((written, index.as_str(), logo), (2, "<p>\n</html>\n", true));
        assert!(again.is_err(), "a folder with files in it");
        let error = broken.unwrap_err().to_string();
        assert!(error.contains("broken.html:1"), "{error}");
    }
}
