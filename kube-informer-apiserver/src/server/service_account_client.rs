//! The test helper: a kubeconfig, client configuration or client acting as a service account, in one call — so a
//! controller under test runs with exactly what its RBAC manifest grants its service account.

use std::path::PathBuf;

use serde_json::{Value, json};

use crate::api::user::service_account_username;
use crate::auth::serviceaccount::token_request;
use crate::server::ApiServer;
use kube_informer::Error;
use kube_informer::client::{Client, Config};

impl ApiServer {
    /// A token of the service account `namespace`/`name`, as `kubectl create token` gets one (a TokenRequest: the
    /// API server's audience, valid for an hour, bound to the service account only — deleting it invalidates the
    /// token).
    ///
    /// # Errors
    /// [`Error::Api`] with the 404 of a service account that does not exist.
    pub fn service_account_token(&self, namespace: &str, name: &str) -> Result<String, Error> {
        let shared = self.shared();
        let answer =
            token_request::create(&shared.store, &shared.issuer, namespace, name, json!({})).map_err(Error::Api)?;
        answer
            .pointer("/status/token")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .ok_or_else(|| Error::InvalidInput("the TokenRequest answered no token".into()))
    }

    /// Writes a kubeconfig whose user is the service account `namespace`/`name` (a fresh
    /// [`service_account_token`](Self::service_account_token)) and returns its path; removed with the server.
    ///
    /// # Errors
    /// As [`service_account_token`](Self::service_account_token), or when the file cannot be written.
    pub fn service_account_kubeconfig(&self, namespace: &str, name: &str) -> Result<PathBuf, Error> {
        let token = self.service_account_token(namespace, name)?;
        self.kubeconfig_with_token(&service_account_username(namespace, name), &token)
    }

    /// A client configuration acting as the service account `namespace`/`name`, without a client-side rate limit
    /// (as [`config`](ApiServer::config)).
    ///
    /// # Errors
    /// As [`service_account_kubeconfig`](Self::service_account_kubeconfig).
    pub fn service_account_config(&self, namespace: &str, name: &str) -> Result<Config, Error> {
        Ok(Config::from_kubeconfig_file(&self.service_account_kubeconfig(namespace, name)?, None)?.no_rate_limit())
    }

    /// A client acting as the service account `namespace`/`name`: with [`ApiServerBuilder::rbac`](crate::ApiServerBuilder::rbac),
    /// its requests are allowed exactly what the service account's bindings grant, and refused with the 403 a
    /// cluster would send.
    ///
    /// # Errors
    /// As [`service_account_config`](Self::service_account_config), or when the client cannot be built.
    pub fn service_account_client(&self, namespace: &str, name: &str) -> Result<Client, Error> {
        Client::new(self.service_account_config(namespace, name)?)
    }
}
