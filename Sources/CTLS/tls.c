#include <arpa/inet.h>
#include <fcntl.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "ctls.h"

struct plistsync_tls_context {
    SSL_CTX *ctx;
    int verify;
};

struct plistsync_tls {
    SSL *ssl;
    BIO *in;
    BIO *out;
    char error[256];
};

/// `what`, then OpenSSL's first queued reason (and a certificate check's verdict) if any.
static void fail(char *error, size_t size, const char *what, SSL *ssl) {
    unsigned long code = ERR_get_error();
    ERR_clear_error();
    if (error == NULL || size == 0) return;
    const char *reason = code ? ERR_reason_error_string(code) : NULL;
    long verdict = ssl ? SSL_get_verify_result(ssl) : X509_V_OK;
    if (verdict != X509_V_OK) {
        snprintf(error, size, "%s: %s (%s)", what, reason ? reason : "certificate refused", X509_verify_cert_error_string(verdict));
    } else if (reason) {
        snprintf(error, size, "%s: %s", what, reason);
    } else {
        snprintf(error, size, "%s", what);
    }
}

static plistsync_tls_context *context(const SSL_METHOD *method) {
    plistsync_tls_context *context = calloc(1, sizeof *context);
    if (context == NULL) return NULL;
    context->ctx = SSL_CTX_new(method);
    if (context->ctx == NULL) {
        free(context);
        return NULL;
    }
    SSL_CTX_set_min_proto_version(context->ctx, TLS1_2_VERSION);
    // TLS 1.2 with forward secrecy and AEAD only (Mozilla's intermediate profile without DHE):
    // OpenSSL's default list also offers CBC suites with SHA-1 and SHA-256 MACs, which
    // testssl.sh and Mozilla list as obsolete. TLS 1.3's suites are all AEAD.
    SSL_CTX_set_cipher_list(context->ctx, PLISTSYNC_TLS12_CIPHERS);
    SSL_CTX_set1_groups_list(context->ctx, PLISTSYNC_TLS_GROUPS);
    SSL_CTX_set_options(context->ctx, SSL_OP_NO_RENEGOTIATION);
    // An idle session gives its record buffers back: thousands of idle subscribers would
    // otherwise hold ~33 KiB each for nothing.
    SSL_CTX_set_mode(context->ctx, SSL_MODE_RELEASE_BUFFERS);
    return context;
}

plistsync_tls_context *plistsync_tls_server_context(const char *cert_path, const char *key_path, char *error, size_t error_size) {
    plistsync_tls_context *server = context(TLS_server_method());
    if (server == NULL) {
        fail(error, error_size, "cannot make a TLS context", NULL);
        return NULL;
    }
    // No session tickets: clients reconnect rarely, and each would cost a round of bytes.
    SSL_CTX_set_num_tickets(server->ctx, 0);
    // AES-128-GCM first: with AES instructions the cheapest per byte of the TLS 1.3 suites.
    SSL_CTX_set_ciphersuites(server->ctx, PLISTSYNC_TLS13_CIPHERSUITES);
    SSL_CTX_set_options(server->ctx, SSL_OP_CIPHER_SERVER_PREFERENCE);
    if (SSL_CTX_use_certificate_chain_file(server->ctx, cert_path) != 1) {
        fail(error, error_size, "cannot read the certificate", NULL);
    } else if (SSL_CTX_use_PrivateKey_file(server->ctx, key_path, SSL_FILETYPE_PEM) != 1) {
        fail(error, error_size, "cannot read the private key", NULL);
    } else if (SSL_CTX_check_private_key(server->ctx) != 1) {
        fail(error, error_size, "the private key does not match the certificate", NULL);
    } else {
        return server;
    }
    plistsync_tls_context_free(server);
    return NULL;
}

plistsync_tls_context *plistsync_tls_client_context(const char *ca_path, int verify, char *error, size_t error_size) {
    plistsync_tls_context *client = context(TLS_client_method());
    if (client == NULL) {
        fail(error, error_size, "cannot make a TLS context", NULL);
        return NULL;
    }
    client->verify = verify;
    if (!verify) {
        SSL_CTX_set_verify(client->ctx, SSL_VERIFY_NONE, NULL);
        return client;
    }
    int loaded = ca_path ? SSL_CTX_load_verify_locations(client->ctx, ca_path, NULL) : SSL_CTX_set_default_verify_paths(client->ctx);
    if (loaded != 1) {
        fail(error, error_size, "cannot read the CA file", NULL);
        plistsync_tls_context_free(client);
        return NULL;
    }
    // A server's own self-signed certificate given as the CA is trusted as it is.
    X509_VERIFY_PARAM_set_flags(SSL_CTX_get0_param(client->ctx), X509_V_FLAG_PARTIAL_CHAIN);
    SSL_CTX_set_verify(client->ctx, SSL_VERIFY_PEER, NULL);
    return client;
}

void plistsync_tls_context_free(plistsync_tls_context *context) {
    if (context == NULL) return;
    SSL_CTX_free(context->ctx);
    free(context);
}

plistsync_tls *plistsync_tls_new(plistsync_tls_context *context, int is_server, const char *host) {
    plistsync_tls *session = calloc(1, sizeof *session);
    if (session == NULL) return NULL;
    session->ssl = SSL_new(context->ctx);
    session->in = BIO_new(BIO_s_mem());
    session->out = BIO_new(BIO_s_mem());
    if (session->ssl == NULL || session->in == NULL || session->out == NULL) {
        if (session->ssl) SSL_free(session->ssl);
        if (session->in) BIO_free(session->in);
        if (session->out) BIO_free(session->out);
        free(session);
        return NULL;
    }
    BIO_set_mem_eof_return(session->in, -1);
    BIO_set_mem_eof_return(session->out, -1);
    SSL_set_bio(session->ssl, session->in, session->out);
    if (is_server) {
        SSL_set_accept_state(session->ssl);
        return session;
    }
    SSL_set_connect_state(session->ssl);
    if (host != NULL && context->verify) {
        unsigned char address[16];
        if (inet_pton(AF_INET, host, address) == 1 || inet_pton(AF_INET6, host, address) == 1) {
            X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(session->ssl), host);
        } else {
            SSL_set1_host(session->ssl, host);
            SSL_set_tlsext_host_name(session->ssl, host);
        }
    }
    SSL_do_handshake(session->ssl);
    ERR_clear_error();
    return session;
}

void plistsync_tls_free(plistsync_tls *session) {
    if (session == NULL) return;
    SSL_free(session->ssl);  // frees both BIOs
    free(session);
}

int plistsync_tls_feed(plistsync_tls *session, const uint8_t *bytes, size_t count) {
    return BIO_write(session->in, bytes, (int)count) == (int)count ? 0 : -1;
}

long plistsync_tls_read(plistsync_tls *session, uint8_t *buffer, size_t capacity) {
    int count = SSL_read(session->ssl, buffer, (int)capacity);
    if (count > 0) return count;
    switch (SSL_get_error(session->ssl, count)) {
    case SSL_ERROR_WANT_READ:
    case SSL_ERROR_WANT_WRITE:
        return 0;
    case SSL_ERROR_ZERO_RETURN:
        return -2;
    default:
        fail(session->error, sizeof session->error, SSL_is_init_finished(session->ssl) ? "TLS failed" : "TLS handshake failed", session->ssl);
        return -1;
    }
}

long plistsync_tls_write(plistsync_tls *session, const uint8_t *bytes, size_t count) {
    if (count == 0) return 0;
    if (!SSL_is_init_finished(session->ssl)) return 0;
    int written = SSL_write(session->ssl, bytes, (int)count);
    if (written > 0) return written;
    switch (SSL_get_error(session->ssl, written)) {
    case SSL_ERROR_WANT_READ:
    case SSL_ERROR_WANT_WRITE:
        return 0;
    default:
        fail(session->error, sizeof session->error, "TLS write failed", session->ssl);
        return -1;
    }
}

const char *plistsync_tls_error(plistsync_tls *session) {
    return session->error;
}

size_t plistsync_tls_pending_output(plistsync_tls *session) {
    return BIO_ctrl_pending(session->out);
}

size_t plistsync_tls_take_output(plistsync_tls *session, uint8_t *buffer, size_t capacity) {
    int count = BIO_read(session->out, buffer, (int)capacity);
    return count > 0 ? (size_t)count : 0;
}

int plistsync_tls_handshake_done(plistsync_tls *session) {
    return SSL_is_init_finished(session->ssl);
}

void plistsync_tls_shutdown(plistsync_tls *session) {
    if (SSL_is_init_finished(session->ssl)) SSL_shutdown(session->ssl);
    ERR_clear_error();
}

static int fingerprint(X509 *certificate, uint8_t digest[32]) {
    unsigned int length = 0;
    return certificate != NULL && X509_digest(certificate, EVP_sha256(), digest, &length) == 1 && length == 32;
}

int plistsync_tls_peer_fingerprint(plistsync_tls *session, uint8_t digest[32]) {
    X509 *certificate = SSL_get1_peer_certificate(session->ssl);
    int found = fingerprint(certificate, digest);
    X509_free(certificate);
    return found;
}

const char *plistsync_tls_version(plistsync_tls *session) {
    return SSL_get_version(session->ssl);
}

int plistsync_tls_file_fingerprint(const char *cert_path, uint8_t digest[32]) {
    FILE *file = fopen(cert_path, "r");
    if (file == NULL) return 0;
    X509 *certificate = PEM_read_X509(file, NULL, NULL, NULL);
    fclose(file);
    int found = fingerprint(certificate, digest);
    X509_free(certificate);
    return found;
}

static int add_extension(X509 *certificate, int nid, const char *value) {
    X509V3_CTX context;
    X509V3_set_ctx_nodb(&context);
    X509V3_set_ctx(&context, certificate, certificate, NULL, NULL, 0);
    X509_EXTENSION *extension = X509V3_EXT_conf_nid(NULL, &context, nid, value);
    if (extension == NULL) return 0;
    int added = X509_add_ext(certificate, extension, -1);
    X509_EXTENSION_free(extension);
    return added;
}

int plistsync_tls_make_self_signed(const char *cert_path, const char *key_path, const char *common_name,
                                   long not_before_days, long days, char *error, size_t error_size) {
    EVP_PKEY *key = EVP_EC_gen("P-256");
    X509 *certificate = X509_new();
    int made = 0;
    unsigned char serial[8];
    char names[512];
    snprintf(names, sizeof names, "DNS:%s,DNS:localhost,IP:127.0.0.1,IP:::1", common_name);
    if (key != NULL && certificate != NULL && RAND_bytes(serial, sizeof serial) == 1) {
        serial[0] &= 0x7F;
        BIGNUM *number = BN_bin2bn(serial, sizeof serial, NULL);
        BN_to_ASN1_INTEGER(number, X509_get_serialNumber(certificate));
        BN_free(number);
        X509_set_version(certificate, 2);
        X509_gmtime_adj(X509_getm_notBefore(certificate), not_before_days * 86400L);
        X509_gmtime_adj(X509_getm_notAfter(certificate), (not_before_days + days) * 86400L);
        X509_set_pubkey(certificate, key);
        X509_NAME *name = X509_get_subject_name(certificate);
        X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8, (const unsigned char *)common_name, -1, -1, 0);
        X509_set_issuer_name(certificate, name);
        made = add_extension(certificate, NID_subject_alt_name, names) && add_extension(certificate, NID_basic_constraints, "critical,CA:TRUE")
            && X509_sign(certificate, key, EVP_sha256()) > 0;
    }
    if (!made) {
        fail(error, error_size, "cannot make a certificate", NULL);
    } else {
        int descriptor = open(key_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        FILE *key_file = descriptor >= 0 ? fdopen(descriptor, "w") : NULL;
        FILE *cert_file = fopen(cert_path, "w");
        made = key_file != NULL && cert_file != NULL && PEM_write_PrivateKey(key_file, key, NULL, NULL, 0, NULL, NULL) == 1
            && PEM_write_X509(cert_file, certificate) == 1;
        if (key_file) made = (fclose(key_file) == 0) && made;
        else if (descriptor >= 0) close(descriptor);
        if (cert_file) made = (fclose(cert_file) == 0) && made;
        if (!made) fail(error, error_size, "cannot write the certificate or key", NULL);
    }
    X509_free(certificate);
    EVP_PKEY_free(key);
    return made;
}
