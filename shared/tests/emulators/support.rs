//! What every emulator test needs: the endpoints, clients and unique names.

use app::cloud::{self, Clients};
use app::consumer::Message;
use aws_sdk_dynamodb::types::{
    AttributeDefinition, BillingMode, GlobalSecondaryIndex, KeySchemaElement, KeyType, Projection,
    ProjectionType, ScalarAttributeType,
};
use redis::aio::ConnectionManager;

fn endpoint(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| {
        panic!(
            "{name} is not set. Run these tests with `make test`, or start the emulators with \
             `make emulators` and export the variables in .local/dev/emulators.env"
        )
    })
}

/// The AWS clients, pointed at the emulator by `AWS_ENDPOINT_URL` exactly as a function is.
pub async fn clients() -> Clients {
    endpoint("AWS_ENDPOINT_URL");
    Clients::new(&cloud::sdk_config().expect("the emulators' region and credentials"))
}

pub async fn redis() -> ConnectionManager {
    cloud::redis(&endpoint("REDIS_URL"))
        .await
        .expect("the local redis-server answers")
}

/// A name no other test uses.
pub fn unique(prefix: &str) -> String {
    format!("{prefix}-{}", uuid::Uuid::new_v4().simple())
}

/// A fresh queue whose name starts with `prefix`; answers its URL.
pub async fn create_queue(clients: &Clients, prefix: &str) -> String {
    let request = clients.sqs.create_queue().queue_name(unique(prefix));
    let output = request.send().await.expect("create the test queue");
    output.queue_url.expect("a created queue has a URL")
}

/// A string attribute of a table's keys.
fn attribute(name: &str) -> AttributeDefinition {
    AttributeDefinition::builder()
        .attribute_name(name)
        .attribute_type(ScalarAttributeType::S)
        .build()
        .unwrap()
}

fn key(name: &str, key_type: KeyType) -> KeySchemaElement {
    KeySchemaElement::builder()
        .attribute_name(name)
        .key_type(key_type)
        .build()
        .unwrap()
}

/// A fresh table with the `pk`/`sk` key layout of every table in `template.yaml`.
pub async fn create_table(clients: &Clients) -> String {
    let name = unique("test-table");
    clients
        .dynamodb
        .create_table()
        .table_name(&name)
        .billing_mode(BillingMode::PayPerRequest)
        .attribute_definitions(attribute("pk"))
        .attribute_definitions(attribute("sk"))
        .key_schema(key("pk", KeyType::Hash))
        .key_schema(key("sk", KeyType::Range))
        .send()
        .await
        .expect("create the test table");
    name
}

/// A fresh table shaped like `template.yaml`'s `SocialTable`: `pk`/`sk` and the follower
/// (`gsi1`) and following (`gsi2`) indexes, projecting all attributes.
pub async fn create_social_table(clients: &Clients) -> String {
    let name = unique("test-social");
    let index = |index: &str| {
        GlobalSecondaryIndex::builder()
            .index_name(index)
            .key_schema(key(&format!("{index}pk"), KeyType::Hash))
            .key_schema(key(&format!("{index}sk"), KeyType::Range))
            .projection(
                Projection::builder()
                    .projection_type(ProjectionType::All)
                    .build(),
            )
            .build()
            .unwrap()
    };
    let mut request = clients
        .dynamodb
        .create_table()
        .table_name(&name)
        .billing_mode(BillingMode::PayPerRequest)
        .key_schema(key("pk", KeyType::Hash))
        .key_schema(key("sk", KeyType::Range))
        .global_secondary_indexes(index("gsi1"))
        .global_secondary_indexes(index("gsi2"));
    for attribute_name in ["pk", "sk", "gsi1pk", "gsi1sk", "gsi2pk", "gsi2sk"] {
        request = request.attribute_definitions(attribute(attribute_name));
    }
    request.send().await.expect("create the social test table");
    name
}

/// A fresh table shaped like `template.yaml`'s `CommerceTable`: the social table's layout
/// and the sale-orders index (`gsi3`), projecting only what a sale's figures sum.
pub async fn create_commerce_table(clients: &Clients) -> String {
    let name = unique("test-commerce");
    let index = |index: &str, projection: Projection| {
        GlobalSecondaryIndex::builder()
            .index_name(index)
            .key_schema(key(&format!("{index}pk"), KeyType::Hash))
            .key_schema(key(&format!("{index}sk"), KeyType::Range))
            .projection(projection)
            .build()
            .unwrap()
    };
    let all = || {
        Projection::builder()
            .projection_type(ProjectionType::All)
            .build()
    };
    let figures = Projection::builder()
        .projection_type(ProjectionType::Include)
        .non_key_attributes("status")
        .non_key_attributes("quantity")
        .non_key_attributes("priceCents")
        .build();
    let mut request = clients
        .dynamodb
        .create_table()
        .table_name(&name)
        .billing_mode(BillingMode::PayPerRequest)
        .key_schema(key("pk", KeyType::Hash))
        .key_schema(key("sk", KeyType::Range))
        .global_secondary_indexes(index("gsi1", all()))
        .global_secondary_indexes(index("gsi2", all()))
        .global_secondary_indexes(index("gsi3", figures));
    for attribute_name in [
        "pk", "sk", "gsi1pk", "gsi1sk", "gsi2pk", "gsi2sk", "gsi3pk", "gsi3sk",
    ] {
        request = request.attribute_definitions(attribute(attribute_name));
    }
    request
        .send()
        .await
        .expect("create the commerce test table");
    name
}

/// `BatchSize` of `function`'s event in `template.yaml`, read from the text (the library has no
/// YAML parser): the batch a consumer must commit whole within DynamoDB's 100 actions per
/// transaction, which moto enforces as DynamoDB does.
pub fn template_batch_size(function: &str) -> usize {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../template.yaml");
    let template = std::fs::read_to_string(&path).expect("template.yaml");
    let start = template
        .find(&format!("\n  {function}:\n"))
        .unwrap_or_else(|| panic!("{function} is in template.yaml"));
    let rest = &template[start..];
    let line = rest
        .lines()
        .find_map(|line| line.trim().strip_prefix("BatchSize:"))
        .unwrap_or_else(|| panic!("{function} has a BatchSize"));
    line.split('#')
        .next()
        .unwrap()
        .trim()
        .parse()
        .expect("a number")
}

/// A batch of messages with these bodies, their ids `m0`, `m1`, … in order.
pub fn batch(bodies: &[String]) -> Vec<Message> {
    Message::numbered(bodies)
}

/// [`batch`], each body sealed as the order route seals it.
pub fn sealed_batch(bodies: &[String]) -> Vec<Message> {
    Message::sealed(bodies, app::seckill::admission::seal::Seal::for_tests())
}
