import ContinuumCore
import Foundation
import NIOCore

/// The addresses at which another device on the LAN (a phone) can open the web UI, from the address the API
/// listens on and this machine's network interfaces.
public struct PhoneAccess: Sendable, Hashable {
    /// The URLs to open, each with the token when the API has one; LAN IPv4 addresses first. Empty when the API
    /// listens on loopback only.
    public let urls: [String]
    /// Whether another device can open one of ``urls``.
    public let reachable: Bool
    /// Whether the API listens on loopback only.
    let loopbackOnly: Bool

    /// An interface address as ``urls(…)`` needs it: its text form and whether it is loopback or link-local.
    public struct Address: Sendable, Hashable {
        public let text: String
        public let isIPv6: Bool

        public init(text: String, isIPv6: Bool) {
            self.text = text
            self.isIPv6 = isIPv6
        }

        /// 127/8, ::1, 169.254/16, fe80::/10: never an address another device opens.
        var isLocalOnly: Bool {
            let lower = text.lowercased()
            return lower.hasPrefix("127.") || lower == "::1" || lower.hasPrefix("169.254.")
                || lower.hasPrefix("fe8") || lower.hasPrefix("fe9") || lower.hasPrefix("fea") || lower.hasPrefix("feb")
        }
    }

    /// - Parameters:
    ///   - host: the address the API listens on (`0.0.0.0` and `::` mean every interface).
    ///   - interfaces: this machine's interface addresses (``interfaceAddresses()``).
    public init(host: String, port: Int, tls: Bool, token: String?, interfaces: [Address]) {
        let bare = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        let candidates: [Address]
        switch bare {
        case "0.0.0.0": candidates = interfaces.filter { !$0.isIPv6 }
        case "::": candidates = interfaces.filter { !$0.isIPv6 } + interfaces.filter(\.isIPv6)
        default: candidates = [Address(text: bare, isIPv6: bare.contains(":"))]
        }
        var seen = Set<String>()
        let usable = candidates.filter { !$0.isLocalOnly && !APIConfiguration.isLoopback(host: $0.text) }
            .filter { seen.insert($0.text).inserted }
        reachable = !usable.isEmpty
        loopbackOnly = APIConfiguration.isLoopback(host: bare)
        let scheme = tls ? "https" : "http"
        urls = usable.map { address in
            let shown = address.isIPv6 ? "[\(address.text)]" : address.text
            return "\(scheme)://\(shown):\(port)/" + (token.map { "?token=\(Self.queryValue($0))" } ?? "")
        }
    }

    /// A token as a query value: `+`, `/` and `=` (allowed in tokens) percent-encoded.
    public static func queryValue(_ token: String) -> String {
        let safe = CharacterSet(charactersIn: "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~")
        return token.addingPercentEncoding(withAllowedCharacters: safe) ?? token
    }

    /// This machine's interface addresses, from the system (`getifaddrs`); none when they cannot be read.
    public static func interfaceAddresses() -> [Address] {
        let devices = (try? System.enumerateDevices()) ?? []
        return devices.compactMap { device in
            guard let address = device.address, let text = address.ipAddress else { return nil }
            if case .v6 = address { return Address(text: text, isIPv6: true) }
            return Address(text: text, isIPv6: false)
        }
    }

    /// What a person reads next to the QR code, or in its place.
    public var message: String {
        if reachable { return "Open this address on a phone on the same network, or scan the QR code." }
        if loopbackOnly {
            return "The API listens on this machine only: start the node with --api-listen 0.0.0.0:7421 to open it "
                + "from a phone."
        }
        return "This machine has no network address a phone could reach (only loopback or link-local ones): "
            + "join the Wi-Fi, then restart the node."
    }

    /// The QR code of the first URL, as an SVG image; nil when there is none or it does not fit.
    public var qrSVG: String? { urls.first.flatMap { try? QRCode(encoding: $0).svg() } }

    /// The QR code of the first URL, drawn with block characters for a terminal; nil when there is none.
    public var qrText: String? { urls.first.flatMap { try? QRCode(encoding: $0).terminalText() } }
}
