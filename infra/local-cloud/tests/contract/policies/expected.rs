//! What each function is expected to be granted, kept in step with the code's calls: the
//! resources as the template spells them, the grants per function, the few wildcards that are
//! necessary, and the SDK call behind each action.

const SOCIAL: &str = "SocialTable.Arn";
const SOCIAL_STREAM: &str = "SocialTable.StreamArn";
const COMMERCE: &str = "CommerceTable.Arn";
/// The commerce table's index of the live sales (and of a user's orders).
const LIVE_SALES: &str = "${CommerceTable.Arn}/index/gsi1";
/// The commerce table's index of a sale's orders and reservations, eight partitions each.
const SALE_INDEX: &str = "${CommerceTable.Arn}/index/gsi3";
const PAYMENT_SECRET: &str = "Ref PaymentWebhookSecret";
/// The cache's AUTH token, read at cold start by every function that uses Redis.
const REDIS_SECRET: Grant = ("Ref RedisAuthSecret", &["secretsmanager:GetSecretValue"]);
/// The key that seals the order queue's messages: place-order and the order consumer only.
const ORDER_SEAL: Grant = ("Ref OrderSealSecret", &["secretsmanager:GetSecretValue"]);
/// Only with `EnablePaymentSandbox=true` (a statement under `!If [HasPaymentSandbox, ...]`
/// where the function exists without it).
const SANDBOX_SECRET: &str = "Ref PaymentSandboxSecret";
/// The keys of the sale pages in the shop's bucket, and no other.
const SALE_PAGES: &str = "${ShopBucket.Arn}/shop/sales/*";
const CACHE: &str = "arn:${AWS::Partition}:elasticache:${AWS::Region}:${AWS::AccountId}:replicationgroup:${RedisCache}";

/// What Lambda's SQS event source polls with, using the function's role.
pub(super) const SQS_POLLER: [&str; 3] = [
    "sqs:ReceiveMessage",
    "sqs:DeleteMessage",
    "sqs:GetQueueAttributes",
];
/// What Lambda's DynamoDB Streams event source reads with, using the function's role.
pub(super) const STREAM_POLLER: [&str; 4] = [
    "dynamodb:DescribeStream",
    "dynamodb:GetRecords",
    "dynamodb:GetShardIterator",
    "dynamodb:ListStreams",
];
/// What Lambda writes a function's logs with, when the function has a role of its own.
pub(super) const LOGS: [&str; 2] = ["logs:CreateLogStream", "logs:PutLogEvents"];
/// A resource and the actions on it.
pub(super) type Grant = (&'static str, &'static [&'static str]);

/// Checks the cache's group after a failover (`CacheFailoverFunction` only).
const DESCRIBE_CACHE: Grant = (CACHE, &["elasticache:DescribeReplicationGroups"]);

/// Per function: resource (as written: `!GetAtt X.Y` as `X.Y`, `!Sub` as its text) -> actions.
/// Each line says which calls of the code need it.
pub(super) const EXPECTED: &[(&str, &[Grant])] = &[
    // upsert_profile: one UpdateItem that returns the profile.
    ("PutProfileFunction", &[(SOCIAL, &["dynamodb:UpdateItem"])]),
    // get_profile.
    ("GetUserFunction", &[(SOCIAL, &["dynamodb:GetItem"])]),
    // follow: GetItem (the target's status, followed_at, the follower's count after a
    // refusal) beside UpdateItem (the caller's rate window), then a transaction of the
    // follower's items only: Put (edge, outbox), Update (counter).
    (
        "FollowFunction",
        &[(
            SOCIAL,
            &[
                "dynamodb:PutItem",
                "dynamodb:UpdateItem",
                "dynamodb:GetItem",
            ],
        )],
    ),
    // unfollow: a transaction of Delete (edge), Update (counter, rate window), Put (outbox);
    // UpdateItem of the rate window alone when there was nothing to unfollow.
    (
        "UnfollowFunction",
        &[(
            SOCIAL,
            &[
                "dynamodb:DeleteItem",
                "dynamodb:UpdateItem",
                "dynamodb:PutItem",
            ],
        )],
    ),
    // get_profile (404 for an unknown user), display_names (BatchGetItem), list_edges (Query).
    (
        "ListFollowersFunction",
        &[
            (SOCIAL, &["dynamodb:GetItem", "dynamodb:BatchGetItem"]),
            ("${SocialTable.Arn}/index/gsi1", &["dynamodb:Query"]),
        ],
    ),
    (
        "ListFollowingFunction",
        &[
            (SOCIAL, &["dynamodb:GetItem", "dynamodb:BatchGetItem"]),
            ("${SocialTable.Arn}/index/gsi2", &["dynamodb:Query"]),
        ],
    ),
    // The stream's poller; SendMessageBatch (IAM action SendMessage) to both queues; Lambda
    // sends a batch it gave up on to the OnFailure destination with the function's role.
    (
        "OutboxRelayFunction",
        &[
            ("OutboxRelayLogGroup.Arn", &LOGS),
            (SOCIAL_STREAM, &STREAM_POLLER),
            ("NotificationQueue.Arn", &["sqs:SendMessage"]),
            ("FollowerCountQueue.Arn", &["sqs:SendMessage"]),
            ("RelayFailureQueue.Arn", &["sqs:SendMessage"]),
        ],
    ),
    // add_follow_notifications: a transaction of conditional Puts and the unread Update.
    (
        "NotificationConsumerFunction",
        &[
            ("NotificationConsumerLogGroup.Arn", &LOGS),
            (SOCIAL, &["dynamodb:PutItem", "dynamodb:UpdateItem"]),
            ("NotificationQueue.Arn", &SQS_POLLER),
        ],
    ),
    // apply_follower_delta: a transaction of applied-marker Puts and one profile Update.
    (
        "FollowerCountConsumerFunction",
        &[
            ("FollowerCountConsumerLogGroup.Arn", &LOGS),
            (SOCIAL, &["dynamodb:PutItem", "dynamodb:UpdateItem"]),
            ("FollowerCountQueue.Arn", &SQS_POLLER),
        ],
    ),
    // page (Query of the caller's partition), unread_count (GetItem).
    (
        "ListNotificationsFunction",
        &[(SOCIAL, &["dynamodb:GetItem", "dynamodb:Query"])],
    ),
    // unread_ids (Query), mark_read (transaction of Updates), unread_count (GetItem).
    (
        "MarkNotificationsReadFunction",
        &[(
            SOCIAL,
            &["dynamodb:GetItem", "dynamodb:Query", "dynamodb:UpdateItem"],
        )],
    ),
    // create: PutItem of the draft.
    ("CreateSaleFunction", &[(COMMERCE, &["dynamodb:PutItem"])]),
    // publish: conditional UpdateItem, GetItem when already published; then Redis.
    (
        "PublishSaleFunction",
        &[
            REDIS_SECRET,
            (COMMERCE, &["dynamodb:UpdateItem", "dynamodb:GetItem"]),
            // QueuedPageRequests::request: the sale's id, for the page writer.
            ("SalePageQueue.Arn", &["sqs:SendMessage"]),
            // DynamoSaleStore::reserved: the buyers who reserved, for the preheat.
            (SALE_INDEX, &["dynamodb:Query"]),
        ],
    ),
    // its own role: the sale ids it is sent (the poller), the sale's GetItem
    // (DynamoSaleStore::get), S3SalePages::put of its page under shop/sales/<id>.
    (
        "SalePageWriterFunction",
        &[
            ("SalePageWriterLogGroup.Arn", &LOGS),
            (COMMERCE, &["dynamodb:GetItem"]),
            (SALE_PAGES, &["s3:PutObject"]),
            ("SalePageQueue.Arn", &SQS_POLLER),
        ],
    ),
    // Redis only (its AUTH token).
    ("GetSaleFunction", &[REDIS_SECRET]),
    // DynamoReservationBook::put (then SADD in Redis), and ::holds after the start.
    (
        "ReserveSaleFunction",
        &[
            REDIS_SECRET,
            (COMMERCE, &["dynamodb:PutItem", "dynamodb:GetItem"]),
        ],
    ),
    // DynamoReservationBook::delete (then SREM in Redis).
    (
        "CancelReservationFunction",
        &[REDIS_SECRET, (COMMERCE, &["dynamodb:DeleteItem"])],
    ),
    // SISMEMBER and SCARD in Redis only (its AUTH token).
    ("GetReservationFunction", &[REDIS_SECRET]),
    // EVALSHA in Redis, SendMessage of OrderPlaced.
    (
        "PlaceOrderFunction",
        &[
            REDIS_SECRET,
            ORDER_SEAL,
            ("OrderQueue.Arn", &["sqs:SendMessage"]),
        ],
    ),
    // confirm_orders / reject_orders (transactions of Puts and the sale's Update), order and
    // stock_remaining (GetItem), PaymentDue (SendMessage).
    (
        "OrderConsumerFunction",
        &[
            REDIS_SECRET,
            ORDER_SEAL,
            ("OrderConsumerLogGroup.Arn", &LOGS),
            (
                COMMERCE,
                &[
                    "dynamodb:PutItem",
                    "dynamodb:UpdateItem",
                    "dynamodb:GetItem",
                ],
            ),
            ("OrderTimeoutQueue.Arn", &["sqs:SendMessage"]),
            ("OrderQueue.Arn", &SQS_POLLER),
        ],
    ),
    // order (GetItem), cancel_orders (transaction of Updates).
    (
        "PaymentTimeoutConsumerFunction",
        &[
            REDIS_SECRET,
            ("PaymentTimeoutConsumerLogGroup.Arn", &LOGS),
            (COMMERCE, &["dynamodb:GetItem", "dynamodb:UpdateItem"]),
            // The poller's, and a COD order's PaymentDue sent again (SendMessage).
            (
                "OrderTimeoutQueue.Arn",
                &[
                    "sqs:SendMessage",
                    "sqs:ReceiveMessage",
                    "sqs:DeleteMessage",
                    "sqs:GetQueueAttributes",
                ],
            ),
        ],
    ),
    // order (GetItem); a PENDING one from Redis.
    (
        "GetOrderFunction",
        &[REDIS_SECRET, (COMMERCE, &["dynamodb:GetItem"])],
    ),
    // orders_of: Query of the orders index.
    (
        "ListOrdersFunction",
        &[("${CommerceTable.Arn}/index/gsi1", &["dynamodb:Query"])],
    ),
    // order (GetItem), keep_for_delivery and open_payment (conditional UpdateItem).
    (
        "PayOrderFunction",
        &[(COMMERCE, &["dynamodb:GetItem", "dynamodb:UpdateItem"])],
    ),
    // the signing secrets at cold start (GetSecretValue: the provider's, and the sandbox's
    // on a stack with it); order (GetItem), settle_online (conditional UpdateItem),
    // record_refund (a transaction: conditional Put of the refund, Update of its order's
    // refunds; or, for an order gone, a conditional PutItem).
    (
        "PaymentCallbackFunction",
        &[
            (PAYMENT_SECRET, &["secretsmanager:GetSecretValue"]),
            (SANDBOX_SECRET, &["secretsmanager:GetSecretValue"]),
            (
                COMMERCE,
                &[
                    "dynamodb:GetItem",
                    "dynamodb:UpdateItem",
                    "dynamodb:PutItem",
                ],
            ),
        ],
    ),
    // refunds_due: Query of the refunds' index.
    (
        "ListRefundsFunction",
        &[("${CommerceTable.Arn}/index/gsi1", &["dynamodb:Query"])],
    ),
    // refund and the refund's order (GetItem), mark_refunded (a transaction of conditional
    // Updates: UpdateItem).
    (
        "SettleRefundFunction",
        &[(COMMERCE, &["dynamodb:GetItem", "dynamodb:UpdateItem"])],
    ),
    // confirm_delivery (UpdateItem), the order as it is when it is not COD (GetItem).
    (
        "ConfirmDeliveryFunction",
        &[(COMMERCE, &["dynamodb:GetItem", "dynamodb:UpdateItem"])],
    ),
    // its own signing secret on first use (GetSecretValue); the caller's order (GetItem), to
    // sign only for it. It writes nothing.
    (
        "PaymentSandboxFunction",
        &[
            (SANDBOX_SECRET, &["secretsmanager:GetSecretValue"]),
            (COMMERCE, &["dynamodb:GetItem"]),
        ],
    ),
    // page: Query of the index of every sale.
    (
        "ListSalesFunction",
        &[("${CommerceTable.Arn}/index/gsi2", &["dynamodb:Query"])],
    ),
    // get, then replace_draft (PutItem, conditional on the draft).
    (
        "EditSaleFunction",
        &[(COMMERCE, &["dynamodb:GetItem", "dynamodb:PutItem"])],
    ),
    // end (UpdateItem), get when the condition failed (GetItem); Redis is not IAM's.
    (
        "EndSaleFunction",
        &[
            REDIS_SECRET,
            (COMMERCE, &["dynamodb:UpdateItem", "dynamodb:GetItem"]),
        ],
    ),
    // the sale (GetItem), order_tallies (Query of the sale-orders index), refunds_due_of
    // (Query of the refunds' index); Redis is not IAM's.
    (
        "SaleFiguresFunction",
        &[
            REDIS_SECRET,
            (COMMERCE, &["dynamodb:GetItem"]),
            ("${CommerceTable.Arn}/index/gsi1", &["dynamodb:Query"]),
            (SALE_INDEX, &["dynamodb:Query"]),
        ],
    ),
    // live: Query of the live index.
    ("SaleListingFunction", &[(LIVE_SALES, &["dynamodb:Query"])]),
    // live_sales (Query of the sparse live index, never a Scan), order and stock_remaining
    // (GetItem), retire_sale (UpdateItem).
    (
        "ReconcileFunction",
        &[
            REDIS_SECRET,
            (LIVE_SALES, &["dynamodb:Query"]),
            (COMMERCE, &["dynamodb:GetItem", "dynamodb:UpdateItem"]),
        ],
    ),
    // the group (DescribeReplicationGroups), then as ReconcileFunction, and the sale's item
    // to preheat it again (GetItem) with the buyers who reserved it (Query of gsi3).
    (
        "CacheFailoverFunction",
        &[
            REDIS_SECRET,
            DESCRIBE_CACHE,
            (LIVE_SALES, &["dynamodb:Query"]),
            (SALE_INDEX, &["dynamodb:Query"]),
            (COMMERCE, &["dynamodb:GetItem", "dynamodb:UpdateItem"]),
        ],
    ),
    // has_mfa: AdminGetUser of an admin signing in (see ALLOWED_WILDCARDS for the resource).
    (
        "AdminMfaGuardFunction",
        &[(USER_POOLS, &["cognito-idp:AdminGetUser"])],
    ),
];

/// The account's user pools in the stack's region: the guard cannot name its own pool,
/// whose `LambdaConfig` names the guard (a circular dependency CloudFormation refuses).
const USER_POOLS: &str =
    "arn:${AWS::Partition}:cognito-idp:${AWS::Region}:${AWS::AccountId}:userpool/*";

/// Wildcards that are genuinely necessary, as (action, resource). Actions that IAM only
/// accepts on `Resource: "*"` belong here if a function ever needs them inline, e.g.
/// `("xray:PutTraceSegments", "*")` or `("ec2:CreateNetworkInterface", "*")`; SAM attaches
/// those through managed policies instead (see the module's documentation).
///
/// Today: the admin MFA guard reads users of the account's pools in its region, as
/// its pool cannot be named (see [`USER_POOLS`]); it is read-only, one action, and only the
/// stack's own pool may invoke the function (`AdminMfaGuardPermission`).
///
/// And publish-sale writes the page of whichever sale it publishes: objects under the sale
/// pages' prefix of the shop's bucket, never the static pages beside them.
pub(super) const ALLOWED_WILDCARDS: &[(&str, &str)] = &[
    ("cognito-idp:AdminGetUser", USER_POOLS),
    ("s3:PutObject", SALE_PAGES),
];

/// The SDK call (as it appears in `shared/src`) behind each data-plane action, so that the
/// expectations above name only actions some code really performs. The pollers' actions are
/// Lambda's, not ours.
pub(super) const CALLS: &[(&str, &[&str])] = &[
    ("dynamodb:GetItem", &[".get_item()"]),
    ("dynamodb:PutItem", &[".put_item()", "Put::builder()"]),
    (
        "dynamodb:UpdateItem",
        &[".update_item()", "Update::builder()"],
    ),
    (
        "dynamodb:DeleteItem",
        &[".delete_item()", "Delete::builder()"],
    ),
    (
        "dynamodb:ConditionCheckItem",
        &["ConditionCheck::builder()"],
    ),
    ("dynamodb:Query", &[".query()"]),
    ("dynamodb:Scan", &[".scan()"]),
    ("dynamodb:BatchGetItem", &[".batch_get_item()"]),
    (
        "sqs:SendMessage",
        &[".send_message()", ".send_message_batch()"],
    ),
    (
        "elasticache:DescribeReplicationGroups",
        &[".describe_replication_groups()"],
    ),
    ("cognito-idp:AdminGetUser", &[".admin_get_user()"]),
    ("secretsmanager:GetSecretValue", &[".get_secret_value()"]),
    ("s3:PutObject", &[".put_object()"]),
];
