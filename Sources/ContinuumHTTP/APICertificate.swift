import Crypto
import Foundation
import NIOSSL
import SwiftASN1
import X509

/// The certificate `--api-tls` serves the API with: a P-256 key and a self-signed certificate, made once and kept in
/// the data directory (`api-tls.key`, mode 0600, and `api-tls.pem`), so that its fingerprint, which a person compares
/// on first use, stays the same across restarts. P-256 because browsers take no Ed25519 certificate.
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
            return APICertificate(der: pem.derBytes, keyPEM: keyPEM)
        }
        let made = try make(hosts: hosts)
        try writePrivate(Data(made.keyPEM.utf8), to: keyURL)
        let pem = PEMDocument(type: "CERTIFICATE", derBytes: made.der).pemString
        try Data((pem + "\n").utf8).write(to: certificateURL, options: .atomic)
        return made
    }

    /// A new key and a self-signed certificate for `hosts`, valid for ten years.
    static func make(hosts: [String]) throws -> APICertificate {
        let key = P256.Signing.PrivateKey()
        let privateKey = Certificate.PrivateKey(key)
        let name = try DistinguishedName { CommonName("continuum-node web UI") }
        let now = Date()
        var names: [GeneralName] = [.dnsName("localhost")]
        for host in hosts {
            if let ip = IPv4Address(host) {
                names.append(.ipAddress(ASN1OctetString(contentBytes: ArraySlice(ip.bytes))))
            } else if !host.contains(":") {
                names.append(.dnsName(host))
            }
        }
        let certificate = try Certificate(
            version: .v3,
            serialNumber: Certificate.SerialNumber(),
            publicKey: privateKey.publicKey,
            notValidBefore: now.addingTimeInterval(-86_400),
            notValidAfter: now.addingTimeInterval(10 * 365 * 86_400),
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

    /// An IPv4 address in dotted form, as four bytes.
    private struct IPv4Address {
        let bytes: [UInt8]
        init?(_ text: String) {
            let parts = text.split(separator: ".", omittingEmptySubsequences: false)
            guard parts.count == 4 else { return nil }
            let values = parts.compactMap { UInt8($0) }
            guard values.count == 4 else { return nil }
            bytes = values
        }
    }
}
