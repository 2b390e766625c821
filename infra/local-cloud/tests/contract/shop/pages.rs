//! The pages themselves: each uploaded whole, with its layout included and no inline script
//! or style, every way in (the distribution's viewer-request function, the runner's rewrite)
//! landing on an uploaded object, and the deploy step uploading the site the runner serves.

use super::{resource, text};
use crate::support::yaml;
use yaml_serde::Value;

/// The pages as they are uploaded, locally and by the deploy step: the site of `shop/`.
fn site() -> Vec<local_cloud::layout::SiteFile> {
    local_cloud::layout::site(&crate::support::root().join("shop"))
        .expect("every page of shop/ expands")
}

/// The site's HTML pages: key, text.
fn site_pages() -> Vec<(String, String)> {
    site()
        .into_iter()
        .filter(|file| file.key.ends_with(".html"))
        .map(|file| (file.key, String::from_utf8(file.body).unwrap()))
        .collect()
}

/// The policy holds only if no page has an inline script, style or event handler: the
/// static pages (as uploaded, their layout included), the sale page's template (as the page
/// writer fills it, its layout included) and the payment sandbox's page load theirs from
/// files under `/shop/`.
#[test]
fn no_page_has_inline_script_or_style() {
    let root = crate::support::root();
    let mut pages = site_pages();
    pages.push((
        "shop/templates/sale.html, its layout included".to_owned(),
        app::seckill::sale::page::template().to_owned(),
    ));
    let sandbox = "shared/src/seckill/payment/sandbox.html";
    pages.push((
        sandbox.to_owned(),
        std::fs::read_to_string(root.join(sandbox)).unwrap(),
    ));
    assert!(pages.len() > 5, "{pages:?}");
    for (name, html) in pages {
        let html = html.to_ascii_lowercase();
        assert!(!html.contains("<style"), "{name} has a <style>");
        assert!(!html.contains(" style="), "{name} has a style attribute");
        assert!(
            !html.contains("javascript:"),
            "{name} has a javascript: URL"
        );
        for script in html.split("<script").skip(1) {
            let tag = script.split('>').next().unwrap_or_default();
            assert!(tag.contains(" src=\"/shop/"), "{name} has an inline script");
        }
        for attribute in html.split_whitespace() {
            let handler = attribute
                .split('=')
                .next()
                .is_some_and(|name| name.starts_with("on") && attribute.contains('='));
            assert!(!handler, "{name} has an event handler: {attribute}");
        }
    }
}

/// The viewer-request function both page behaviours (`/shop` and `/shop/*`) run, by logical
/// id: the same one for both.
fn page_function() -> String {
    let config = &resource("ShopDistribution")["Properties"]["DistributionConfig"];
    let behaviours = config["CacheBehaviors"].as_sequence().unwrap();
    let mut functions = Vec::new();
    for pattern in ["/shop", "/shop/*"] {
        let behaviour = behaviours
            .iter()
            .find(|b| b["PathPattern"] == pattern)
            .unwrap_or_else(|| panic!("no behaviour for {pattern}"));
        assert_eq!(behaviour["TargetOriginId"], "pages", "{pattern}");
        let associations = behaviour["FunctionAssociations"]
            .as_sequence()
            .unwrap_or_else(|| panic!("{pattern}: no viewer-request function"));
        let viewer: Vec<&Value> = associations
            .iter()
            .filter(|a| a["EventType"] == "viewer-request")
            .collect();
        assert_eq!(viewer.len(), 1, "{pattern}: {associations:?}");
        let arn = text(&viewer[0]["FunctionARN"]);
        let id = arn
            .strip_prefix("!GetAtt ")
            .and_then(|a| a.strip_suffix(".FunctionARN"))
            .unwrap_or_else(|| panic!("{pattern}: {arn}"))
            .to_owned();
        functions.push(id);
    }
    assert_eq!(functions[0], functions[1], "one function for both");
    functions.remove(0)
}

/// What the template's function does to each URI, run by node (CloudFront Functions are
/// JavaScript): the URI it sends to the bucket, or the location it redirects to.
fn run_page_function(uris: &[&str]) -> Vec<local_cloud::pages::ViewerRequest> {
    let function = resource(&page_function());
    assert_eq!(function["Type"], "AWS::CloudFront::Function");
    let properties = &function["Properties"];
    assert_eq!(properties["FunctionConfig"]["Runtime"], "cloudfront-js-2.0");
    assert_eq!(
        properties["AutoPublish"], true,
        "published, or the edge runs none"
    );
    let code = properties["FunctionCode"].as_str().expect("inline code");
    let script = format!(
        "{code}\nconst uris = {uris};\nconsole.log(JSON.stringify(uris.map(function (uri) {{\n\
         var event = {{version: '1.0', context: {{eventType: 'viewer-request'}}, viewer: {{ip: '192.0.2.1'}},\n\
           request: {{method: 'GET', uri: uri, querystring: {{}}, headers: {{}}, cookies: {{}}}}}};\n\
         var answer = handler(event);\n\
         return answer.statusCode\n\
           ? {{status: answer.statusCode, location: answer.headers.location.value}}\n\
           : {{uri: answer.uri}};\n\
         }})));",
        uris = serde_json::to_string(uris).unwrap()
    );
    let output = std::process::Command::new("node")
        .arg("-e")
        .arg(&script)
        .output()
        .expect("node runs the distribution's function (Node.js is a test dependency)");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let answers: Vec<serde_json::Value> = serde_json::from_slice(&output.stdout).unwrap();
    answers
        .into_iter()
        .map(|answer| match answer["uri"].as_str() {
            Some(uri) => local_cloud::pages::ViewerRequest::Origin(uri.to_owned()),
            None => {
                assert_eq!(answer["status"], 301, "{answer}");
                local_cloud::pages::ViewerRequest::Redirect(
                    answer["location"].as_str().unwrap().to_owned(),
                )
            }
        })
        .collect()
}

/// S3 behind an origin access control has no index document: the distribution's function
/// gives a directory's URI its `index.html` (and sends `/shop` to `/shop/`). The runner serves
/// the pages through its port of that function, so the local tests see `/shop/` as the
/// cloud serves it; here the template's own code, run by node, and the port agree.
#[test]
fn the_runner_rewrites_page_uris_as_the_distributions_function_does() {
    let uris = [
        "/shop",
        "/shop/",
        "/shop/index.html",
        "/shop/checkout.html",
        "/shop/sales/0190d4b2-0000-7000-8000-000000000000",
        "/shop/sales/",
        "/shop/a/b/",
        "/shop//",
        "/shop/shop.css",
    ];
    let cloud = run_page_function(&uris);
    for (uri, cloud) in uris.iter().zip(cloud) {
        assert_eq!(local_cloud::pages::viewer_request(uri), cloud, "{uri}");
    }
    assert_eq!(
        local_cloud::pages::viewer_request("/shop/"),
        local_cloud::pages::ViewerRequest::Origin("/shop/index.html".to_owned())
    );
}

/// The key a page URI ends at in the bucket, following the function's redirect once.
fn served_key(uri: &str) -> String {
    use local_cloud::pages::{ViewerRequest, viewer_request};
    let path = uri.split(['?', '#']).next().unwrap();
    let origin = match viewer_request(path) {
        ViewerRequest::Redirect(location) => match viewer_request(&location) {
            ViewerRequest::Origin(origin) => origin,
            ViewerRequest::Redirect(again) => panic!("{uri}: redirected twice, to {again}"),
        },
        ViewerRequest::Origin(origin) => origin,
    };
    origin.trim_start_matches('/').to_owned()
}

/// Every way into the pages lands on an object the deploy step uploads: the `ShopUrl`
/// output, the sign-in client's callback and logout URLs, every page's links and the
/// callback's way back (S3 answers any other key 403).
#[test]
fn every_way_into_the_pages_lands_on_an_uploaded_object() {
    let template = yaml("template.yaml");
    let mut uris: Vec<String> = Vec::new();
    let shop_url = text(&template["Outputs"]["ShopUrl"]["Value"]);
    uris.push(shop_url.split("}").last().unwrap().to_owned());
    let client = &template["Resources"]["ShopClient"]["Properties"];
    for key in ["CallbackURLs", "LogoutURLs"] {
        for url in client[key].as_sequence().unwrap() {
            // !If [HasShopDomain, !Sub https://${ShopDomain}/shop/..., http://localhost/shop/...]
            for choice in text(url).split_whitespace().skip(2) {
                let path = choice
                    .split_once("/shop")
                    .map(|(_, rest)| format!("/shop{rest}"));
                uris.extend(path);
            }
        }
    }
    let site = site();
    for file in &site {
        if !file.key.ends_with(".html") && !file.key.ends_with(".js") {
            continue;
        }
        let source = String::from_utf8_lossy(&file.body);
        for quote in ['"', '\''] {
            for piece in source.split(quote).skip(1).step_by(2) {
                if piece.starts_with("/shop")
                    && !piece.contains(['$', '{', ' '])
                    && !piece.contains("//")
                {
                    uris.push(piece.to_owned());
                }
            }
        }
    }
    assert!(uris.len() > 10, "{uris:?}");
    assert!(uris.iter().any(|u| u == "/shop/"), "{uris:?}");
    for uri in &uris {
        let key = served_key(uri);
        let Some(file) = key.strip_prefix("shop/") else {
            panic!("{uri}: key {key} is not a page's");
        };
        // shop/sales/ is the sale pages' prefix (a page's link appends the sale's id);
        // config.json is written by the deploy step.
        if uri.ends_with("/sales/") || file == "config.json" {
            continue;
        }
        assert!(
            site.iter().any(|uploaded| uploaded.key == file),
            "{uri} ends at the key {key}, which no uploaded page has: S3 answers 403"
        );
    }
}

/// The part of `html` between its `<head>` and `</head>`, which it has once each.
fn head(name: &str, html: &str) -> String {
    assert_eq!(html.matches("<head>").count(), 1, "{name}: {html}");
    assert_eq!(html.matches("</head>").count(), 1, "{name}: {html}");
    let start = html.find("<head>").unwrap();
    let end = html.find("</head>").unwrap();
    assert!(start < end, "{name}");
    html[start..end].to_owned()
}

/// The head and header of the pages are written once (`shop/_layout/`) and included by each
/// page: every page of the site comes out whole, with no include left in it, one `<head>`
/// with the stylesheet and `shop.js` (and its own scripts, which the site has), one
/// `<header>` and a title; no source of the layout is a page of the site.
#[test]
fn every_page_is_uploaded_with_its_layout_included() {
    let root = crate::support::root();
    let sources: Vec<String> = std::fs::read_dir(root.join("shop"))
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".html"))
        .collect();
    let site = site();
    let pages = site_pages();
    assert_eq!(pages.len(), sources.len(), "{sources:?}");
    assert!(pages.len() >= 6, "{sources:?}");
    for (name, html) in &pages {
        assert!(sources.contains(name), "{name} is not a page of shop/");
        assert!(!html.contains("<!-- include"), "{name}: {html}");
        assert!(!html.contains("{{"), "{name}: {html}");
        assert!(html.starts_with("<!doctype html>\n"), "{name}");
        assert!(html.trim_end().ends_with("</html>"), "{name}");
        let head = head(name, html);
        assert!(
            head.contains(r#"<link rel="stylesheet" href="/shop/shop.css">"#),
            "{name}: {head}"
        );
        assert!(
            head.contains(r#"<script src="/shop/shop.js" defer></script>"#),
            "{name}: {head}"
        );
        assert_eq!(head.matches("<title>").count(), 1, "{name}: {head}");
        assert!(head.contains(" · shop</title>"), "{name}: {head}");
        for script in head.split(r#"<script src="/shop/"#).skip(1) {
            let file = script.split('"').next().unwrap();
            assert!(
                site.iter().any(|uploaded| uploaded.key == file),
                "{name} loads /shop/{file}, which is not uploaded"
            );
        }
        let own = format!(r#"<script src="/shop/{}""#, name.replace(".html", ".js"));
        assert!(head.contains(&own), "{name} loads its own script: {head}");
        assert_eq!(html.matches("<header>").count(), 1, "{name}");
        assert_eq!(html.matches("<body>").count(), 1, "{name}");
    }
    assert!(
        site.iter()
            .all(|file| !file.key.starts_with("_layout/") && !file.key.starts_with("templates/")),
        "a source is uploaded"
    );
}

/// `make deploy-pages` (`infra/deploy-pages.sh`) uploads what the runner uploads to its
/// bucket (and serves, `e2e shop::`): the script runs here against a recording stand-in
/// for the AWS CLI, which keeps a copy of what the sync sends.
#[test]
fn deploy_pages_uploads_the_site_the_runner_serves() {
    let dir = std::env::temp_dir().join(format!("deploy-pages-{}", uuid::Uuid::new_v4().simple()));
    let uploaded = dir.join("uploaded");
    std::fs::create_dir_all(&uploaded).unwrap();
    let log = dir.join("calls.log");
    let aws = dir.join("aws");
    // The stack's outputs and its ShopDomain (already the distribution's host: no update).
    std::fs::write(
        &aws,
        format!(
            r#"#!/usr/bin/env bash
printf '%s\n' "aws $*" >> '{log}'
case " $* " in
*ShopBucketName*) echo contract-bucket ;;
*ShopUrl*) echo https://d111.cloudfront.net/shop/ ;;
*ShopSignInDomain*) echo contract.auth.us-east-1.amazoncognito.com ;;
*ShopClientId*) echo contract-client ;;
*ShopDomain*) echo d111.cloudfront.net ;;
*" s3 sync "*) cp -R "$3/." '{uploaded}/' ;;
*list-distributions*) echo None ;;
esac
"#,
            log = log.display(),
            uploaded = uploaded.display()
        ),
    )
    .unwrap();
    let output = std::process::Command::new("bash")
        .arg(crate::support::root().join("infra/deploy-pages.sh"))
        .arg("contract")
        .env("AWS_CLI", format!("bash {}", aws.display()))
        .env("LOCAL_CLOUD", env!("CARGO_BIN_EXE_local-cloud"))
        .output()
        .expect("bash runs");
    let calls = std::fs::read_to_string(&log).unwrap_or_default();
    let mut sent = Vec::new();
    collect_files(&uploaded, &uploaded, &mut sent);
    std::fs::remove_dir_all(&dir).unwrap();
    crate::support::assert_succeeded(&output);
    let sync = calls
        .lines()
        .find(|call| call.starts_with("aws s3 sync "))
        .unwrap_or_else(|| panic!("no sync: {calls}"));
    assert!(sync.contains(" s3://contract-bucket/shop/ "), "{sync}");
    for flag in ["--delete", "--exclude sales/*", "--exclude config.json"] {
        assert!(sync.contains(flag), "{flag}: {sync}");
    }
    sent.sort();
    let site: Vec<(String, Vec<u8>)> = site().into_iter().map(|f| (f.key, f.body)).collect();
    let keys = |files: &[(String, Vec<u8>)]| files.iter().map(|f| f.0.clone()).collect::<Vec<_>>();
    assert_eq!(keys(&sent), keys(&site));
    for ((key, sent), (_, site)) in sent.iter().zip(&site) {
        assert!(sent == site, "{key}: the deploy step sends another file");
    }
}

/// The files under `dir`: key relative to `root`, bytes.
fn collect_files(
    root: &std::path::Path,
    dir: &std::path::Path,
    files: &mut Vec<(String, Vec<u8>)>,
) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            collect_files(root, &path, files);
        } else {
            let key = path
                .strip_prefix(root)
                .unwrap()
                .to_string_lossy()
                .replace('\\', "/");
            files.push((key, std::fs::read(&path).unwrap()));
        }
    }
}
