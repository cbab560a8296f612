//! TLS without sockets: a client and a server connection shake hands through in-memory buffers.

/// Runs the TLS handshake between `client` and `server`, each one's records handed to the other in memory, until
/// neither is handshaking. Panics on a TLS error (a test's setup failed).
pub fn handshake(client: &mut rustls::ClientConnection, server: &mut rustls::ServerConnection) {
    while client.is_handshaking() || server.is_handshaking() {
        let mut wire = Vec::new();
        while client.wants_write() {
            client.write_tls(&mut wire).unwrap();
        }
        server.read_tls(&mut &wire[..]).unwrap();
        server.process_new_packets().unwrap();
        wire.clear();
        while server.wants_write() {
            server.write_tls(&mut wire).unwrap();
        }
        client.read_tls(&mut &wire[..]).unwrap();
        client.process_new_packets().unwrap();
    }
}
