//! Service-account tokens as kube-apiserver issues and checks them: the `serviceaccounts/token` subresource
//! (TokenRequest) signs a JWT for a service account, optionally bound to a Pod, Secret or Node whose deletion
//! invalidates it; the server then authenticates that token as `system:serviceaccount:<ns>:<name>` in the groups
//! `system:serviceaccounts` and `system:serviceaccounts:<ns>`, and `tokenreviews` answers for it.

pub(crate) mod claims;
pub(crate) mod jwt;
pub(crate) mod token_request;

pub(crate) use jwt::TokenIssuer;
