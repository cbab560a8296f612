//! Pod logs: the `log` subresource of core/v1 pods, whole or as a stream.

use super::api::Api;
use super::params::LogParams;
use super::raw_request::ResponseStream;
use super::{Reading, Request};
use crate::object::Object;
use crate::{Error, Result};

impl<K: Object> Api<K> {
    /// The log of a container of pod `name`, read whole (at most
    /// [`Config::max_response_size`](super::Config::max_response_size) bytes; invalid UTF-8 replaced by `�`).
    /// With [`LogParams::follow`] it returns when the container ends; to read a followed log as it comes, use
    /// [`log_stream`](Self::log_stream).
    ///
    /// Works on any `Api` of core/v1 pods — [`Pod`](crate::object::core::Pod), k8s-openapi's `Pod`,
    /// [`DynamicObject`](crate::object::DynamicObject) — addressed in a namespace; anything else is
    /// [`Error::InvalidInput`]. kube-apiserver's answers: 404 when the pod does not exist, 400 for a container the
    /// pod does not have (or none named when it has several), an empty log for a pod not yet on a node.
    ///
    /// ```no_run
    /// use kube_informer::client::{Api, Client, params::LogParams};
    /// use kube_informer::object::core::Pod;
    ///
    /// let pods: Api<Pod> = Api::namespaced(Client::try_default()?, "prod");
    /// let last = pods.logs("web-0", &LogParams::default().container("app").tail_lines(20))?;
    /// print!("{last}");
    /// # Ok::<(), kube_informer::Error>(())
    /// ```
    pub fn logs(&self, name: &str, lp: &LogParams) -> Result<String> {
        let req = self.log_request(name, lp)?;
        let bytes = self.client().request_bytes(&req)?;
        Ok(match String::from_utf8(bytes) {
            Ok(text) => text,
            Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
        })
    }

    /// The log of a container of pod `name` as it arrives: a blocking [`Read`](std::io::Read) that returns `Ok(0)`
    /// when the server ends the log — at once without [`LogParams::follow`], when the container ends with it — on a
    /// connection of its own that [`ResponseStream::stopper`] closes from any thread (a read blocked in it then
    /// fails at once with [`Error::Stopped`] inside the I/O error, and the reading thread is free).
    ///
    /// A followed log has no read timeout — a container may stay silent for hours; stop it with its stopper. Without
    /// `follow` the client's [`Timeouts::read`](super::Timeouts::read) applies. Opening the stream takes one token
    /// of the client's rate limit; reading it takes none. Which `Api`s and errors: as [`logs`](Self::logs).
    ///
    /// ```no_run
    /// use std::io::{BufRead, BufReader};
    /// use kube_informer::client::{Api, Client, params::LogParams};
    /// use kube_informer::object::core::Pod;
    ///
    /// let pods: Api<Pod> = Api::namespaced(Client::try_default()?, "prod");
    /// let stream = pods.log_stream("web-0", &LogParams::default().follow().since_seconds(60))?;
    /// let stopper = stream.stopper(); // stopper.stop() from another thread ends the loop below
    /// for line in BufReader::new(stream).lines() {
    ///     match line {
    ///         Ok(line) => println!("{line}"),
    ///         Err(e) => { eprintln!("log ended: {e}"); break }
    ///     }
    /// }
    /// # drop(stopper);
    /// # Ok::<(), kube_informer::Error>(())
    /// ```
    pub fn log_stream(&self, name: &str, lp: &LogParams) -> Result<ResponseStream> {
        let req = self.log_request(name, lp)?;
        let read_limit = if lp.follow { None } else { self.client().read_timeout() };
        ResponseStream::open(self.client(), &req, Reading::Stream(read_limit))
    }

    fn log_request(&self, name: &str, lp: &LogParams) -> Result<Request> {
        self.pods_only("logs")?;
        self.target().log(name, lp)
    }

    /// Checks that this `Api` addresses core/v1 pods, for a pod-only call.
    pub(crate) fn pods_only(&self, what: &str) -> Result<()> {
        let r = self.resource();
        if r.group.is_empty() && r.plural == "pods" {
            Ok(())
        } else {
            Err(Error::InvalidInput(format!(
                "{what} are served for core/v1 pods only; this Api addresses {}",
                r.qualified_name()
            )))
        }
    }
}
