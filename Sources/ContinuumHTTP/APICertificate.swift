import Crypto
import Foundation
import NIOSSL
import SwiftASN1
import X509

/// The certificate `--api-tls` serves the API with: a P-256 key and a self-signed certificate, made once and kept in
/// the data directory (`api-tls.key`, mode 0600, and `api-tls.pem`), so that its fingerprint, which a person compares
/// on first use, stays the same across restarts. P-256 because browsers take no Ed25519 certificate. Valid for 800
/// days, under the 825 that Apple's systems accept from a server (iOS and macOS refuse longer ones, whatever the
/// user says), and made anew in the last 30 days of its life (the fingerprint printed changes then).
public struct APICertificate: Sendable {
    /// The certificate, DER.
    public let der: [UInt8]
    /// The private key, PEM.
    let keyPEM: String

    /// "SHA-256 AB:CD:…": the SHA-256 of the certificate's DER, as browsers show it in their certificate viewer.
    public var fingerprint: String {
        "SHA-256 " + SHA256.hash(data: der).map { String(format: "%02X", $0) }.joined(separator: ":")
    }

    /// The base64 SHA-256 of the certificate's SubjectPublicKeyInfo (what Chromium's
    /// `--ignore-certificate-errors-spki-list` takes).
    public var spkiHash: String {
        get throws {
            let certificate = try Certificate(derEncoded: der)
            var serializer = DER.Serializer()
            try serializer.serialize(certificate.publicKey)
            return Data(SHA256.hash(data: serializer.serializedBytes)).base64EncodedString()
        }
    }

    /// Loads the certificate kept in `directory`, or makes one (for `hosts`: the names and addresses it is for).
    public static func loadOrCreate(in directory: URL, hosts: [String]) throws -> APICertificate {
        let keyURL = directory.appendingPathComponent("api-tls.key")
        let certificateURL = directory.appendingPathComponent("api-tls.pem")
        if FileManager.default.fileExists(atPath: keyURL.path),
            FileManager.default.fileExists(atPath: certificateURL.path)
        {
            try requirePrivate(keyURL)
            let keyPEM = try String(contentsOf: keyURL, encoding: .utf8)
            let pem = try PEMDocument(pemString: String(contentsOf: certificateURL, encoding: .utf8))
            // Both must parse, and belong together, or the API would fail at its first connection.
            let key = try P256.Signing.PrivateKey(pemRepresentation: keyPEM)
            let certificate = try Certificate(derEncoded: pem.derBytes)
            guard certificate.publicKey == Certificate.PublicKey(key.publicKey) else {
                throw APIStartError(
                    description: "\(certificateURL.path) is not the certificate of \(keyURL.path); remove both to "
                        + "make a new pair"
                )
            }
            if certificate.notValidAfter > Date().addingTimeInterval(renewBefore) {
                return APICertificate(der: pem.derBytes, keyPEM: keyPEM)
            }
        }
        let made = try make(hosts: hosts)
        try writePrivate(Data(made.keyPEM.utf8), to: keyURL)
        let pem = PEMDocument(type: "CERTIFICATE", derBytes: made.der).pemString
        try Data((pem + "\n").utf8).write(to: certificateURL, options: .atomic)
        return made
    }

    /// How long a certificate is valid: under the 825 days Apple's systems take.
    static let lifetime: TimeInterval = 800 * 86_400
    /// A kept certificate with less than this left is made anew.
    static let renewBefore: TimeInterval = 30 * 86_400

    /// A new key and a self-signed certificate for `hosts` (names, IPv4 and IPv6 addresses), valid for 800 days.
    static func make(hosts: [String]) throws -> APICertificate {
        let key = P256.Signing.PrivateKey()
        let privateKey = Certificate.PrivateKey(key)
        let name = try DistinguishedName { CommonName("continuum-node web UI") }
        let now = Date()
        var names: [GeneralName] = [.dnsName("localhost")]
        // The wildcards are where it listens, never a name a browser uses.
        for host in Set(hosts).subtracting(["localhost", "0.0.0.0", "::"]).sorted() {
            if let bytes = Self.addressBytes(host) {
                names.append(.ipAddress(ASN1OctetString(contentBytes: ArraySlice(bytes))))
            } else if !host.contains(":") && !host.isEmpty {
                names.append(.dnsName(host))
            }
        }
        let certificate = try Certificate(
            version: .v3,
            serialNumber: Certificate.SerialNumber(),
            publicKey: privateKey.publicKey,
            notValidBefore: now.addingTimeInterval(-86_400),
            notValidAfter: now.addingTimeInterval(lifetime),
            issuer: name,
            subject: name,
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                SubjectAlternativeNames(names)
                try ExtendedKeyUsage([.serverAuth])
            },
            issuerPrivateKey: privateKey
        )
        var serializer = DER.Serializer()
        try serializer.serialize(certificate)
        return APICertificate(der: serializer.serializedBytes, keyPEM: key.pemRepresentation)
    }

    /// The server side of TLS with this certificate (TLS 1.2 and 1.3: phones' browsers speak both).
    func serverConfiguration() throws -> TLSConfiguration {
        var configuration = TLSConfiguration.makeServerConfiguration(
            certificateChain: [.certificate(try NIOSSLCertificate(bytes: der, format: .der))],
            privateKey: .privateKey(try NIOSSLPrivateKey(bytes: Array(keyPEM.utf8), format: .pem))
        )
        configuration.minimumTLSVersion = .tlsv12
        return configuration
    }

    /// An IPv4 or IPv6 address in text form as its 4 or 16 bytes; nil for a name.
    static func addressBytes(_ text: String) -> [UInt8]? {
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 { return withUnsafeBytes(of: &v4) { Array($0) } }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, text, &v6) == 1 { return withUnsafeBytes(of: &v6) { Array($0) } }
        return nil
    }
}
