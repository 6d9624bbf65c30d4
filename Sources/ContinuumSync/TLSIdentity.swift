import ContinuumCore
import Crypto
import Foundation
import NIOCore
import NIOSSL
import SwiftASN1
import X509

/// TLS 1.3 with certificates whose key is the node's Ed25519 identity, and no CA.
///
/// Each node presents a self-signed certificate for its identity key, on both sides of the connection (mutual
/// TLS). The TLS handshake proves that the peer holds the private key of the certificate it presents, so the
/// key in the peer's certificate *is* the peer's authenticated identity; the session then checks that the peer's
/// HELLO names the same key. A man-in-the-middle cannot complete the handshake as either node.
public struct TLSIdentity: Sendable {
    public let author: AuthorID
    let serverContext: NIOSSLContext
    let clientContext: NIOSSLContext

    /// The DER prefix of an Ed25519 SubjectPublicKeyInfo; the raw 32-byte key follows it.
    static let ed25519SPKIPrefix: [UInt8] = [0x30, 0x2A, 0x30, 0x05, 0x06, 0x03, 0x2B, 0x65, 0x70, 0x03, 0x21, 0x00]

    public init(_ identity: NodeIdentity) throws {
        author = identity.author
        let key = Certificate.PrivateKey(identity.privateKey)
        let name = try DistinguishedName {
            CommonName("continuum-node \(identity.author.short)")
        }
        let now = Date()
        let certificate = try Certificate(
            version: .v3,
            serialNumber: Certificate.SerialNumber(),
            publicKey: key.publicKey,
            notValidBefore: now.addingTimeInterval(-86_400),
            notValidAfter: now.addingTimeInterval(100 * 365 * 86_400),
            issuer: name,
            subject: name,
            signatureAlgorithm: .ed25519,
            extensions: Certificate.Extensions {},
            issuerPrivateKey: key
        )
        var serializer = DER.Serializer()
        try serializer.serialize(certificate)
        let nioCertificate = try NIOSSLCertificate(bytes: serializer.serializedBytes, format: .der)
        let nioKey = try NIOSSLPrivateKey(bytes: Array(try key.serializeAsPEM().pemString.utf8), format: .pem)

        func configure(_ configuration: inout TLSConfiguration) {
            configuration.minimumTLSVersion = .tlsv13
            configuration.maximumTLSVersion = .tlsv13
            // Ask for and check the peer's certificate, through our own callback (no CA, no host names).
            configuration.certificateVerification = .noHostnameVerification
            configuration.trustRoots = .certificates([])
            configuration.signingSignatureAlgorithms = [.ed25519]
            configuration.verifySignatureAlgorithms = [.ed25519]
        }
        var server = TLSConfiguration.makeServerConfiguration(
            certificateChain: [.certificate(nioCertificate)],
            privateKey: .privateKey(nioKey)
        )
        configure(&server)
        var client = TLSConfiguration.makeClientConfiguration()
        client.certificateChain = [.certificate(nioCertificate)]
        client.privateKey = .privateKey(nioKey)
        configure(&client)
        serverContext = try NIOSSLContext(configuration: server)
        clientContext = try NIOSSLContext(configuration: client)
    }

    /// The identity in a peer's certificate, if its key is Ed25519.
    static func author(of certificate: NIOSSLCertificate) -> AuthorID? {
        // A peer's certificate whose key cannot be read is one without an Ed25519 identity: nil, and it is refused.
        guard let spki = try? certificate.extractPublicKey().toSPKIBytes(), spki.count == 44,
            spki.starts(with: ed25519SPKIPrefix)
        else { return nil }
        return AuthorID(bytes: spki[12...])
    }

    /// Accepts a certificate chain whose leaf carries an Ed25519 key (the handshake itself proves possession).
    /// When `expected` is set, only that identity is accepted.
    static func verifier(expected: AuthorID?) -> NIOSSLCustomVerificationCallback {
        { certificates, promise in
            guard let leaf = certificates.first, let peer = author(of: leaf), expected == nil || expected == peer else {
                promise.succeed(.failed)
                return
            }
            promise.succeed(.certificateVerified)
        }
    }

    /// A handler for an accepted connection.
    func serverHandler() -> NIOSSLServerHandler {
        NIOSSLServerHandler(context: serverContext, customVerificationCallback: Self.verifier(expected: nil))
    }

    /// A handler for a dialled connection; `expected` pins the peer's identity when it is known.
    func clientHandler(expected: AuthorID?) throws -> NIOSSLClientHandler {
        try NIOSSLClientHandler(
            context: clientContext,
            serverHostname: nil,
            customVerificationCallback: Self.verifier(expected: expected)
        )
    }
}
