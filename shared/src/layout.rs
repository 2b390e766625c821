//! The shop pages' shared head and layout, written once in `shop/_layout/` and included where
//! a page names it: one expansion for every page. The runner's site (`local-cloud`'s
//! `layout` module: what it uploads to the emulator's bucket and what `infra/deploy-pages.sh`
//! syncs) expands the static pages with it, and the sale page's renderer
//! ([`crate::seckill::sale::page`]) its template, once, before any value of a sale is filled:
//! the expansion reads trusted files only, never a value.
//!
//! A page includes a partial with a comment on a line of its own:
//!
//! ```html
//! <!-- include head title="Your order" scripts="order.js" -->
//! ```
//!
//! which is replaced by the partial `head` (`shop/_layout/head.html`), each `{{title}}` in it
//! by the value (HTML-escaped), and each line holding `{{scripts*}}` repeated once per
//! space-separated word of the value (none for an empty value). A partial's name that has no
//! file, a parameter it does not use or one it uses that the include does not give, a
//! malformed include or one sharing its line, and an include inside a partial are errors:
//! nothing comes out with an include left in it.

use std::collections::BTreeMap;

/// The folder of the partials, under the pages' folder (`shop/`).
pub const LAYOUT: &str = "_layout";

/// What opens an include.
const MARKER: &str = "<!--";
/// Its keyword, after [`MARKER`] and spaces.
const INCLUDE: &str = "include";

/// Why a page cannot be expanded; `page` is its path under the pages' folder, `line` the
/// include's (1-based).
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum LayoutError {
    #[error("{page}:{line}: {why}")]
    Malformed {
        page: String,
        line: usize,
        why: String,
    },
    #[error("{page}:{line}: no partial {name:?} (no {LAYOUT}/{name}.html)")]
    UnknownPartial {
        page: String,
        line: usize,
        name: String,
    },
    #[error("{page}:{line}: the partial {name:?} needs the parameter {parameter:?}")]
    MissingParameter {
        page: String,
        line: usize,
        name: String,
        parameter: String,
    },
    #[error("{page}:{line}: the partial {name:?} has no parameter {parameter:?}")]
    UnknownParameter {
        page: String,
        line: usize,
        name: String,
        parameter: String,
    },
    #[error("{LAYOUT}/{name}.html: {why}")]
    BadPartial { name: String, why: String },
}

/// An include as written: the partial's name and its parameters.
#[derive(Debug, PartialEq, Eq)]
struct Include {
    name: String,
    parameters: BTreeMap<String, String>,
}

/// `source`, the page `page`, with each include replaced by its partial of `partials`.
pub fn expand(
    page: &str,
    source: &str,
    partials: &BTreeMap<String, String>,
) -> Result<String, LayoutError> {
    let mut out = String::with_capacity(source.len() * 2);
    for (index, line) in source.split_inclusive('\n').enumerate() {
        let number = index + 1;
        let malformed = |why: &str| LayoutError::Malformed {
            page: page.to_owned(),
            line: number,
            why: why.to_owned(),
        };
        if !has_include(line) {
            out.push_str(line);
            continue;
        }
        let include = parse(line.trim()).map_err(|why| malformed(&why))?;
        let partial = partials
            .get(&include.name)
            .ok_or_else(|| LayoutError::UnknownPartial {
                page: page.to_owned(),
                line: number,
                name: include.name.clone(),
            })?;
        out.push_str(&fill(page, number, &include, partial)?);
    }
    Ok(out)
}

/// Whether `line` opens an include (`<!--`, spaces, `include`).
fn has_include(line: &str) -> bool {
    line.match_indices(MARKER).any(|(at, _)| {
        line[at + MARKER.len()..]
            .trim_start()
            .strip_prefix(INCLUDE)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with(char::is_whitespace))
    })
}

/// An include that is its whole (trimmed) line: `<!-- include NAME KEY="VALUE"... -->`.
fn parse(line: &str) -> Result<Include, String> {
    let inner = line
        .strip_prefix(MARKER)
        .and_then(|rest| rest.strip_suffix("-->"))
        .ok_or("an include is a comment on a line of its own: <!-- include NAME ... -->")?;
    let rest = inner
        .trim_start()
        .strip_prefix(INCLUDE)
        .ok_or("not an include")?;
    let mut words = rest.trim();
    let name_end = words.find(char::is_whitespace).unwrap_or(words.len());
    let name = &words[..name_end];
    if !is_name(name) {
        return Err(format!(
            "{name:?} is not a partial's name (letters, digits, - and _)"
        ));
    }
    words = words[name_end..].trim_start();
    let mut parameters = BTreeMap::new();
    while !words.is_empty() {
        let (key, after) = words
            .split_once("=\"")
            .ok_or_else(|| format!("expected KEY=\"VALUE\" at {words:?}"))?;
        if !is_name(key) {
            return Err(format!("{key:?} is not a parameter's name"));
        }
        let (value, after) = after
            .split_once('"')
            .ok_or_else(|| format!("the value of {key} has no closing quote"))?;
        if after.starts_with(|c: char| !c.is_whitespace()) {
            return Err(format!("expected a space after the value of {key}"));
        }
        if parameters
            .insert(key.to_owned(), value.to_owned())
            .is_some()
        {
            return Err(format!("{key} is given twice"));
        }
        words = after.trim_start();
    }
    Ok(Include {
        name: name.to_owned(),
        parameters,
    })
}

fn is_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

/// A placeholder of a partial's line: its parameter, and whether the line repeats per word.
struct Placeholder<'a> {
    start: usize,
    end: usize,
    name: &'a str,
    each: bool,
}

/// The placeholders of a partial's line, in order.
fn placeholders<'a>(partial: &str, line: &'a str) -> Result<Vec<Placeholder<'a>>, LayoutError> {
    let bad = |why: String| LayoutError::BadPartial {
        name: partial.to_owned(),
        why,
    };
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(open) = line[from..].find("{{").map(|at| from + at) {
        let close = line[open..]
            .find("}}")
            .map(|at| open + at)
            .ok_or_else(|| bad(format!("unclosed {{{{ in {line:?}")))?;
        let inner = &line[open + 2..close];
        let (name, each) = match inner.strip_suffix('*') {
            Some(name) => (name, true),
            None => (inner, false),
        };
        if !is_name(name) {
            return Err(bad(format!("{{{{{inner}}}}} is not a placeholder")));
        }
        found.push(Placeholder {
            start: open,
            end: close + 2,
            name,
            each,
        });
        from = close + 2;
    }
    if found.iter().filter(|p| p.each).count() > 1 {
        return Err(bad(format!("two repeating placeholders in {line:?}")));
    }
    Ok(found)
}

/// The partial `include.name` with the include's parameters, for the include at `page:line`.
fn fill(page: &str, line: usize, include: &Include, partial: &str) -> Result<String, LayoutError> {
    if has_include(partial) {
        return Err(LayoutError::BadPartial {
            name: include.name.clone(),
            why: "a partial includes no other".to_owned(),
        });
    }
    let mut used = std::collections::BTreeSet::new();
    let mut out = String::with_capacity(partial.len() * 2);
    for text in partial.split_inclusive('\n') {
        let found = placeholders(&include.name, text)?;
        let mut value_of = |name: &str| {
            used.insert(name.to_owned());
            include
                .parameters
                .get(name)
                .ok_or_else(|| LayoutError::MissingParameter {
                    page: page.to_owned(),
                    line,
                    name: include.name.clone(),
                    parameter: name.to_owned(),
                })
        };
        let words: Vec<&str> = match found.iter().find(|p| p.each) {
            Some(each) => value_of(each.name)?.split_whitespace().collect(),
            None => vec![""],
        };
        for word in words {
            let mut at = 0;
            for placeholder in &found {
                out.push_str(&text[at..placeholder.start]);
                let value = if placeholder.each {
                    word
                } else {
                    value_of(placeholder.name)?
                };
                out.push_str(&escape(value));
                at = placeholder.end;
            }
            out.push_str(&text[at..]);
        }
    }
    if let Some(unused) = include.parameters.keys().find(|key| !used.contains(*key)) {
        return Err(LayoutError::UnknownParameter {
            page: page.to_owned(),
            line,
            name: include.name.clone(),
            parameter: unused.clone(),
        });
    }
    Ok(out)
}

/// `text` safe in HTML text and quoted attributes (the layout's parameters, the sale page's
/// values, the payment sandbox's and the development sign-in's pages).
pub fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#39;")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn partials(entries: &[(&str, &str)]) -> BTreeMap<String, String> {
        entries
            .iter()
            .map(|(name, text)| ((*name).to_owned(), (*text).to_owned()))
            .collect()
    }

    const HEAD: &str = "<head>\n<title>{{title}} · shop</title>\n\
        <script src=\"/shop/{{scripts*}}\" defer></script>\n</head>\n";

    #[test]
    fn an_include_is_replaced_by_its_partial_with_the_pages_parameters() {
        let page = "<!doctype html>\n<!-- include head title=\"Your <order> & 'co'\" scripts=\"order.js  listing.js\" -->\n<main></main>\n";
        let html = expand("order.html", page, &partials(&[("head", HEAD)])).unwrap();
        assert_eq!(
            html,
            "<!doctype html>\n<head>\n<title>Your &lt;order&gt; &amp; &#39;co&#39; · shop</title>\n\
             <script src=\"/shop/order.js\" defer></script>\n\
             <script src=\"/shop/listing.js\" defer></script>\n</head>\n<main></main>\n"
        );
        let none = "  <!--include head scripts=\"\" title=\"x\"-->\n";
        let html = expand("a.html", none, &partials(&[("head", HEAD)])).unwrap();
        assert_eq!(html, "<head>\n<title>x · shop</title>\n</head>\n");
    }

    #[test]
    fn a_page_without_includes_is_left_as_it_is() {
        let page = "<p>{{not a placeholder}} <!-- a comment --></p>";
        assert_eq!(expand("a.html", page, &BTreeMap::new()).unwrap(), page);
    }

    #[test]
    fn an_unknown_partial_is_an_error() {
        let error = expand(
            "a.html",
            "<p>\n<!-- include heda title=\"x\" -->\n",
            &partials(&[("head", HEAD)]),
        )
        .unwrap_err();
        assert_eq!(
            error,
            LayoutError::UnknownPartial {
                page: "a.html".to_owned(),
                line: 2,
                name: "heda".to_owned()
            }
        );
        assert!(error.to_string().contains("_layout/heda.html"), "{error}");
    }

    #[test]
    fn a_missing_or_unknown_parameter_is_an_error() {
        let head = partials(&[("head", HEAD)]);
        let missing = expand("a.html", "<!-- include head title=\"x\" -->", &head);
        assert!(
            matches!(&missing, Err(LayoutError::MissingParameter { parameter, .. }) if parameter == "scripts"),
            "{missing:?}"
        );
        let unknown = expand(
            "a.html",
            "<!-- include head title=\"x\" scripts=\"\" titel=\"y\" -->",
            &head,
        );
        assert!(
            matches!(&unknown, Err(LayoutError::UnknownParameter { parameter, .. }) if parameter == "titel"),
            "{unknown:?}"
        );
    }

    #[test]
    fn a_malformed_include_is_an_error_never_left_in_the_page() {
        let head = partials(&[("head", HEAD)]);
        for page in [
            "<p><!-- include head title=\"x\" scripts=\"\" --></p>",
            "<!-- include head title=\"x\" scripts=\"\"",
            "<!-- include head title=x scripts=\"\" -->",
            "<!-- include head title=\"x scripts=\"\" -->",
            "<!-- include head title=\"x\"scripts=\"\" -->",
            "<!-- include head title=\"x\" title=\"y\" scripts=\"\" -->",
            "<!-- include ../head -->",
            "<!-- include -->",
        ] {
            let answer = expand("a.html", page, &head);
            assert!(
                matches!(answer, Err(LayoutError::Malformed { line: 1, .. })),
                "{page}: {answer:?}"
            );
        }
        // "includes" is not the keyword: an ordinary comment.
        let comment = "<!-- includes the head -->\n";
        assert_eq!(expand("a.html", comment, &head).unwrap(), comment);
    }

    #[test]
    fn a_partial_includes_no_other_and_has_well_formed_placeholders() {
        for partial in [
            "<!-- include head -->\n",
            "<title>{{title</title>\n",
            "<title>{{ti tle}}</title>\n",
            "<p>{{a*}} {{b*}}</p>\n",
        ] {
            let answer = expand(
                "a.html",
                "<!-- include bad a=\"1\" b=\"2\" -->\n",
                &partials(&[("bad", partial)]),
            );
            assert!(
                matches!(answer, Err(LayoutError::BadPartial { .. })),
                "{partial}: {answer:?}"
            );
        }
    }
}
