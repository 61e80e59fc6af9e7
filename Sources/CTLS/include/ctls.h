#ifndef PLISTSYNC_CTLS_H
#define PLISTSYNC_CTLS_H

#include <stddef.h>
#include <stdint.h>

/// TLS over memory buffers (OpenSSL memory BIOs): the event loop moves the bytes, nothing here
/// blocks or touches a socket. Errors are returned as text in a caller's buffer.

/// The suites every context offers: TLS 1.2 with ECDHE and AEAD only (no CBC, no SHA-1 MAC),
/// and TLS 1.3's three (a server prefers AES-128-GCM, the cheapest per byte with AES
/// instructions). `serve --help` and the README name them.
#define PLISTSYNC_TLS12_CIPHERS "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305"
#define PLISTSYNC_TLS13_CIPHERSUITES "TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256"
/// Key exchange groups, Mozilla's intermediate profile's (sslyze flags secp521r1 and X448).
#define PLISTSYNC_TLS_GROUPS "X25519:prime256v1:secp384r1"

typedef struct plistsync_tls_context plistsync_tls_context;
typedef struct plistsync_tls plistsync_tls;

/// A server context from PEM files. NULL on failure, with the reason in `error`.
plistsync_tls_context *plistsync_tls_server_context(const char *cert_path, const char *key_path, char *error, size_t error_size);

/// A client context. `ca_path` set: the server's chain must lead to it (a self-signed server
/// certificate may be its own CA). `verify` 0: no chain check (the caller pins a fingerprint).
plistsync_tls_context *plistsync_tls_client_context(const char *ca_path, int verify, char *error, size_t error_size);

void plistsync_tls_context_free(plistsync_tls_context *context);

/// A session; a client one checks the certificate against `host` (a name or an IP address)
/// when its context verifies, and starts its handshake at once.
plistsync_tls *plistsync_tls_new(plistsync_tls_context *context, int is_server, const char *host);
void plistsync_tls_free(plistsync_tls *session);

/// Hands bytes received from the socket to the session.
int plistsync_tls_feed(plistsync_tls *session, const uint8_t *bytes, size_t count);

/// Plaintext received so far, up to `capacity`: the count, 0 when none is ready, -1 when the
/// connection failed (reason from `plistsync_tls_error`), -2 when the peer closed the session.
long plistsync_tls_read(plistsync_tls *session, uint8_t *buffer, size_t capacity);

/// Encrypts plaintext: the count taken, 0 while the handshake is still running, -1 on failure.
long plistsync_tls_write(plistsync_tls *session, const uint8_t *bytes, size_t count);

/// Why the last read or write failed.
const char *plistsync_tls_error(plistsync_tls *session);

/// Bytes waiting to go to the socket.
size_t plistsync_tls_pending_output(plistsync_tls *session);
/// Moves up to `capacity` of them into `buffer`; the count.
size_t plistsync_tls_take_output(plistsync_tls *session, uint8_t *buffer, size_t capacity);

int plistsync_tls_handshake_done(plistsync_tls *session);
/// Queues a close_notify alert.
void plistsync_tls_shutdown(plistsync_tls *session);

/// SHA-256 of the peer's certificate (DER) into `digest`: 1, or 0 without one.
int plistsync_tls_peer_fingerprint(plistsync_tls *session, uint8_t digest[32]);
/// The negotiated protocol ("TLSv1.3").
const char *plistsync_tls_version(plistsync_tls *session);

/// SHA-256 of the certificate in a PEM file: 1, or 0 when it cannot be read.
int plistsync_tls_file_fingerprint(const char *cert_path, uint8_t digest[32]);

/// Writes a new self-signed certificate (EC P-256, valid `days` days from `not_before_days`
/// relative to now, for `common_name`, localhost and 127.0.0.1/::1) and its key (mode 0600).
int plistsync_tls_make_self_signed(const char *cert_path, const char *key_path, const char *common_name,
                                   long not_before_days, long days, char *error, size_t error_size);

#endif
