//! DynamoDB adapter of [`ReservationBook`]: one item per buyer and sale in the commerce
//! table, `SALE#<id>#RESERVATION#<userId>` / `RESERVATION`, on one of the sale's eight gsi3
//! partitions of reservations (key design in [`crate::seckill::keys`]).

use crate::config::{ConfigError, Env};
use crate::dynamo::{Table, key, s, write_if};
use crate::fault::OrFault;
use crate::ids::{SaleId, UserId};
use crate::retry::Backoff;
use crate::seckill::keys::{
    RESERVATION_SK, reservation_pk, reservation_shard, sale_reservations_pk,
};
use crate::seckill::reservation::ReservationBook;
use crate::seckill::sale::StoreError;
use async_trait::async_trait;
use aws_sdk_dynamodb::Client;

/// The commerce table's reservations.
#[derive(Clone, Debug)]
pub struct DynamoReservationBook {
    table: Table,
}

impl DynamoReservationBook {
    pub fn new(client: Client, table: impl Into<String>) -> Self {
        Self {
            table: Table::new(client, table),
        }
    }

    /// The book in the table named by `COMMERCE_TABLE`.
    pub fn from_env(env: &Env, client: Client) -> Result<Self, ConfigError> {
        Table::from_env(env, client, "COMMERCE_TABLE").map(|table| Self { table })
    }
}

#[async_trait]
impl ReservationBook for DynamoReservationBook {
    #[tracing::instrument(level = "debug", skip(self))]
    async fn put(&self, sale: &SaleId, user: &UserId, at: &str) -> Result<(), StoreError> {
        let mut item = key(reservation_pk(sale, user.as_str()), RESERVATION_SK);
        item.extend([
            ("entity".to_owned(), s("RESERVATION")),
            ("saleId".to_owned(), s(sale.as_str())),
            ("userId".to_owned(), s(user.as_str())),
            ("reservedAt".to_owned(), s(at)),
            (
                "gsi3pk".to_owned(),
                s(sale_reservations_pk(sale, reservation_shard(user.as_str()))),
            ),
            ("gsi3sk".to_owned(), s(user.as_str())),
        ]);
        let put = self
            .table
            .client
            .put_item()
            .table_name(&self.table.name)
            .set_item(Some(item))
            .condition_expression("attribute_not_exists(pk)");
        // Reserved before (the condition failed): the first time is kept.
        write_if(
            &Backoff::default(),
            "failed to record the reservation",
            || put.clone().send(),
        )
        .await?;
        Ok(())
    }

    #[tracing::instrument(level = "debug", skip(self))]
    async fn delete(&self, sale: &SaleId, user: &UserId) -> Result<(), StoreError> {
        self.table
            .client
            .delete_item()
            .table_name(&self.table.name)
            .set_key(Some(key(
                reservation_pk(sale, user.as_str()),
                RESERVATION_SK,
            )))
            .send()
            .await
            .or_fault("failed to delete the reservation")?;
        Ok(())
    }

    #[tracing::instrument(level = "debug", skip(self))]
    async fn holds(&self, sale: &SaleId, user: &UserId) -> Result<bool, StoreError> {
        let key = key(reservation_pk(sale, user.as_str()), RESERVATION_SK);
        let item = self
            .table
            .get_consistent(key, Some("pk"), "failed to read the reservation")
            .await?;
        Ok(item.is_some())
    }
}
