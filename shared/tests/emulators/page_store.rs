//! The S3 adapter of the sale pages against moto: a page is written under its path on the
//! site, as HTML, and writing it again replaces it; a missing bucket is an error, not a panic.

use crate::support::{clients, unique};
use app::cloud;
use app::ids::SaleId;
use app::seckill::sale::page::{SalePages, page_key};
use app::seckill::sale::s3::{PAGE_CACHE_CONTROL, S3SalePages};

#[tokio::test]
async fn a_page_is_stored_as_html_under_its_path_and_replaced_when_written_again() {
    clients().await; // says so when the emulator is not configured
    let s3 = cloud::s3_client(&cloud::sdk_config().expect("the emulators' region and credentials"));
    let bucket = unique("pages");
    s3.create_bucket()
        .bucket(&bucket)
        .send()
        .await
        .expect("create the test bucket");
    let pages = S3SalePages::new(s3.clone(), bucket.clone());
    let id = SaleId::generate();
    pages.put(&id, "<h1>first</h1>".to_owned()).await.unwrap();
    pages.put(&id, "<h1>second</h1>".to_owned()).await.unwrap();

    let object = s3
        .get_object()
        .bucket(&bucket)
        .key(format!("shop/sales/{id}"))
        .send()
        .await
        .expect("the page is at shop/sales/<id>");
    assert_eq!(object.content_type(), Some("text/html; charset=utf-8"));
    assert_eq!(object.cache_control(), Some(PAGE_CACHE_CONTROL));
    let body = object.body.collect().await.unwrap().into_bytes();
    assert_eq!(&body[..], b"<h1>second</h1>");
    assert_eq!(page_key(&id), format!("shop/sales/{id}"));

    let missing = S3SalePages::new(s3.clone(), unique("no-such-bucket"));
    let err = missing.put(&id, "<p>".to_owned()).await.unwrap_err();
    assert!(
        format!("{:?}", anyhow::Error::from(err)).contains("PutObject"),
        "the cause says what failed"
    );
}
