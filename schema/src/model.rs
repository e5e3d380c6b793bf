//! The model catalog (protocol section 21): `model/list`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ModelListParams {}

/// One model of the provider's catalog.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ModelCatalogItem {
    pub id: String,
    /// Provider-reported owner; may be empty.
    pub owned_by: String,
    /// Provider-reported creation time (ISO 8601 UTC); empty when unknown.
    pub created_at: String,
}

/// Provider errors are reported in the result, not as JSON-RPC errors.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ModelListResult {
    pub success: bool,
    pub models: Vec<ModelCatalogItem>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_code: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_message: Option<String>,
}
