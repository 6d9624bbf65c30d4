import Testing

@testable import ContinuumHTTP

/// The addresses a phone is given: from the API's listen address and the machine's interfaces.
@Suite("Phone access: LAN addresses, never loopback, link-local or 0.0.0.0")
struct PhoneAccessTests {
    let interfaces: [PhoneAccess.Address] = [
        .init(text: "127.0.0.1", isIPv6: false), .init(text: "192.168.1.5", isIPv6: false),
        .init(text: "169.254.3.3", isIPv6: false), .init(text: "10.0.0.2", isIPv6: false),
        .init(text: "::1", isIPv6: true), .init(text: "fe80::1", isIPv6: true), .init(text: "fd00::5", isIPv6: true),
        .init(text: "192.168.1.5", isIPv6: false),
    ]

    @Test("0.0.0.0: every LAN IPv4 address once, in order, with the token; :: adds the routable IPv6 ones")
    func wildcard() {
        let any = PhoneAccess(
            host: "0.0.0.0",
            port: 7421,
            tls: false,
            token: "abcdefghijklmnop",
            interfaces: interfaces
        )
        #expect(
            any.urls == [
                "http://192.168.1.5:7421/?token=abcdefghijklmnop", "http://10.0.0.2:7421/?token=abcdefghijklmnop",
            ]
        )
        #expect(any.reachable && any.message.contains("scan the QR code"))
        let both = PhoneAccess(host: "[::]", port: 80, tls: true, token: nil, interfaces: interfaces)
        #expect(both.urls == ["https://192.168.1.5:80/", "https://10.0.0.2:80/", "https://[fd00::5]:80/"])
    }

    @Test("one address: that one; loopback: none, and a message that says how")
    func oneAddress() {
        let one = PhoneAccess(host: "10.0.0.2", port: 7421, tls: true, token: "a+b/c=defghijklmnop", interfaces: [])
        #expect(one.urls == ["https://10.0.0.2:7421/?token=a%2Bb%2Fc%3Ddefghijklmnop"])
        let loopback = PhoneAccess(host: "127.0.0.1", port: 7421, tls: false, token: nil, interfaces: interfaces)
        #expect(loopback.urls.isEmpty && !loopback.reachable && loopback.qrSVG == nil && loopback.qrText == nil)
        #expect(loopback.message.contains("--api-listen 0.0.0.0:7421"))
        let alone = PhoneAccess(
            host: "0.0.0.0",
            port: 7421,
            tls: false,
            token: nil,
            interfaces: [.init(text: "127.0.0.1", isIPv6: false)]
        )
        #expect(!alone.reachable && alone.message.contains("no network address a phone could reach"))
    }
}
