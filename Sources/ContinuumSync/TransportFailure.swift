import Foundation
import NIOCore
import NIOSSL

/// A connection that failed below the frames (TLS, the socket), in words a person can act on: what probably
/// answered, and what to check. SwiftNIO's and BoringSSL's own descriptions (`handshakeFailed(NIOSSL.BoringSSLError
/// .sslError([… WRONG_VERSION_NUMBER at …/tls_record.cc:127]))`) name a source file of the build, not the cause.
enum TransportFailure {
    static func words(_ error: any Error) -> String {
        if let ssl = error as? NIOSSLError { return words(ssl) }
        if let io = error as? IOError { return "the connection failed: \(io.description)" }
        if let channel = error as? ChannelError {
            switch channel {
            case .connectTimeout: return "the connection timed out"
            case .eof, .ioOnClosedChannel, .alreadyClosed, .outputClosed, .inputClosed:
                return "the other end closed the connection"
            default: return "the connection failed (\(channel))"
            }
        }
        return withoutSourcePaths("\(error)")
    }

    private static func words(_ error: NIOSSLError) -> String {
        let text = "\(error)"
        // BoringSSL's reasons when the first bytes back are not a TLS record: a plain HTTP server (the API's port),
        // a plaintext node (--insecure-plaintext), or another program.
        let notTLS = ["WRONG_VERSION_NUMBER", "PACKET_LENGTH_TOO_LONG", "HTTP_REQUEST", "HTTPS_PROXY_REQUEST"]
        if notTLS.contains(where: text.contains) {
            return "what answers at this address does not speak TLS: it is not a node's sync port (another program, "
                + "a node's web API, or a node run with --insecure-plaintext); check the address, or the code, for a typo"
        }
        if text.contains("CERTIFICATE_VERIFY_FAILED") {
            return "the node at this address is not the one expected (its key differs); check the address, or the "
                + "code, for a typo"
        }
        switch error {
        case .uncleanShutdown: return "the other end closed the connection during the TLS handshake"
        default: return "the TLS handshake failed (\(withoutSourcePaths(text)))"
        }
    }

    /// `text` without the source locations BoringSSL appends to its errors (` at /…/file.cc:127`).
    static func withoutSourcePaths(_ text: String) -> String {
        text.replacingOccurrences(of: #" at /[^\s\]\)]*"#, with: "", options: .regularExpression)
    }
}
