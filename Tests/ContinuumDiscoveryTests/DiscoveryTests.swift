import ContinuumCore
import ContinuumWire
import Logging
import Testing

@testable import ContinuumDiscovery

#if canImport(Glibc)
import Glibc
#endif

@Suite struct ServiceTXTTests {
    let node = AuthorID(hex: String(repeating: "ab", count: 32))!

    @Test func advertisementRoundTrips() throws {
        let advertisement = ServiceAdvertisement(
            name: "Alice",
            port: 7420,
            node: node,
            protocolVersion: 1,
            networkHash: NetworkID.default.advertisedHash
        )
        #expect(
            advertisement.txt == [
                "txtvers=1", "node=\(node.hex)", "proto=1", "net=feffc8d5566192b8349bcd457113eb7b",
            ]
        )
        // Avahi hands entries back in reverse order.
        let parsed = try ServiceTXT.parse(advertisement.txt.reversed()).get()
        #expect(parsed == ServiceTXT(node: node, protocolVersion: 1, networkHash: advertisement.networkHash))
    }

    @Test(arguments: [
        (["proto=1", "net=feffc8d5566192b8349bcd457113eb7b"], "node="),
        (["node=abc", "proto=1", "net=feffc8d5566192b8349bcd457113eb7b"], "node="),
        (["node=\(String(repeating: "ab", count: 32))", "net=feffc8d5566192b8349bcd457113eb7b"], "proto="),
        (["node=\(String(repeating: "ab", count: 32))", "proto=x", "net=feffc8d5566192b8349bcd457113eb7b"], "proto="),
        (["node=\(String(repeating: "ab", count: 32))", "proto=1"], "net="),
        (["node=\(String(repeating: "ab", count: 32))", "proto=1", "net=FEFFC8D5566192B8349BCD457113EB7B"], "net="),
        (["node=\(String(repeating: "ab", count: 32))", "proto=1", "net=feff"], "net="),
    ])
    func malformedTXTIsRefusedWithTheKey(entries: [String], key: String) {
        guard case .failure(let error) = ServiceTXT.parse(entries) else {
            Issue.record("accepted \(entries)")
            return
        }
        #expect(error.reason.contains(key))
    }

    @Test("open groups: announced as open0= … open3= (id, colon, name), parsed back, malformed ones ignored")
    func openGroupsRoundTrip() throws {
        let party = AnnouncedGroup(id: GroupID(hex: String(repeating: "cd", count: 32))!, name: "Party: 2nd floor")
        let long = AnnouncedGroup(
            id: GroupID(hex: String(repeating: "ef", count: 32))!,
            name: String(repeating: "é", count: 100)
        )
        let advertisement = ServiceAdvertisement(
            name: "Alice",
            port: 7420,
            node: node,
            protocolVersion: 2,
            networkHash: NetworkID.default.advertisedHash,
            openGroups: [party, long] + (0..<4).map { AnnouncedGroup(id: party.id, name: "extra \($0)") }
        )
        let entries = advertisement.txt
        #expect(entries[4] == "open0=\(String(repeating: "cd", count: 32)):Party: 2nd floor")
        #expect(entries.count == 4 + 4, "at most 4 open groups are announced")
        #expect(entries.allSatisfy { $0.utf8.count <= 255 }, "each TXT string fits its length byte")
        let parsed = try ServiceTXT.parse(entries.reversed()).get()
        #expect(parsed.openGroups.count == 4)
        #expect(parsed.openGroups[0] == party)
        // The long name is cut to 150 bytes on a character boundary (75 é of 2 bytes each).
        #expect(parsed.openGroups[1].name == String(repeating: "é", count: 75))
        let bad = try ServiceTXT.parse([
            "node=\(node.hex)", "proto=2", "net=feffc8d5566192b8349bcd457113eb7b", "open0=nothex:Party",
            "open1=\(String(repeating: "cd", count: 32)):", "open2=\(String(repeating: "cd", count: 32))",
            "open3=\(String(repeating: "cd", count: 32)):Fine", "open9=\(String(repeating: "cd", count: 32)):Too far",
        ]).get()
        #expect(bad.openGroups.map(\.name) == ["Fine"])
    }

    @Test func unknownKeysAreIgnored() throws {
        let parsed = try ServiceTXT.parse([
            "future=1", "node=\(node.hex)", "proto=2", "net=feffc8d5566192b8349bcd457113eb7b", "novalue",
        ]).get()
        #expect(parsed.protocolVersion == 2)
    }

    @Test func instanceNameFitsADNSLabel() {
        let long = ServiceAdvertisement(
            name: String(repeating: "é", count: 40),
            port: 1,
            node: node,
            protocolVersion: 1,
            networkHash: ""
        )
        #expect(long.instanceName.utf8.count <= 63)
        #expect(long.instanceName.allSatisfy { $0 == "é" })
    }

    @Test func ipv4IsPreferred() {
        let txt = ServiceTXT(node: node, protocolVersion: 1, networkHash: "")
        let v6 = ResolvedService(txt: txt, name: "a", host: "fe80::1%eth0", port: 1, isIPv4: false)
        let v4 = ResolvedService(txt: txt, name: "a", host: "10.0.0.2", port: 1, isIPv4: true)
        #expect(preferred([v6, v4]) == v4)
        #expect(preferred([v6]) == v6)
        #expect(preferred([]) == nil)
    }
}

@Suite struct NetworkKeyTests {
    /// The test vector of Docs/PROTOCOL.md.
    @Test func keyVector() throws {
        let id = try #require(NetworkID.key(Array("correct horse battery staple\n".utf8)))
        #expect(id.hex == "062423563074e229af30e9e40ead26ce5e6047cfb3af6bbfedfab7648e03d8a2")
        #expect(id.advertisedHash == "b870ad6d97306b6ecf80972b6adaacd8")
        #expect(NetworkID.key(Array("correct horse battery staple".utf8)) == id)
        #expect(NetworkID.key(Array("correct horse battery staple\r\n".utf8)) == id)
    }

    @Test func emptyOrHugeKeysAreRefused() {
        #expect(NetworkID.key([UInt8]()) == nil)
        #expect(NetworkID.key(Array("\n\r\n".utf8)) == nil)
        #expect(NetworkID.key([UInt8](repeating: 1, count: NetworkID.maxKeyBytes + 1)) == nil)
        #expect(NetworkID.key([UInt8](repeating: 1, count: NetworkID.maxKeyBytes)) != nil)
    }

    @Test func namedAndKeyedNetworksDiffer() {
        #expect(NetworkID.key(Array("default".utf8)) != NetworkID.default)
        #expect(NetworkID.named("a").advertisedHash != NetworkID.named("b").advertisedHash)
        #expect(NetworkID.default.advertisedHash == "feffc8d5566192b8349bcd457113eb7b")
    }
}

@Suite struct AvahiErrorTests {
    @Test func noDaemonSaysSo() {
        #expect(AvahiDiscovery.describe(-26) == "avahi-daemon not running (Daemon not running)")
        #expect(AvahiDiscovery.describe(-23).hasPrefix("lost the connection to avahi-daemon"))
    }
}

@Suite struct AvahiNoBusTests {
    /// With no system bus, the client cannot be created: status says why at once, and cancelling ends `run`
    /// and its event stream. (No daemon is contacted: the bus address points nowhere.)
    @Test func noBusIsReportedAndCancellationEndsRun() async throws {
        setenv("DBUS_SYSTEM_BUS_ADDRESS", "unix:path=/nonexistent/continuum-discovery-test-bus", 1)
        let discovery = AvahiDiscovery(logger: Logger(label: "test"), retryInterval: .milliseconds(200))
        #expect(discovery.status().state == .starting)
        let node = AuthorID(hex: String(repeating: "cd", count: 32))!
        let running = Task {
            await discovery.run(
                advertising: ServiceAdvertisement(
                    name: "test",
                    port: 1,
                    node: node,
                    protocolVersion: 1,
                    networkHash: NetworkID.default.advertisedHash
                )
            )
        }
        // Generous: under a full parallel test run the first attempt can take seconds to be scheduled.
        let deadline = ContinuousClock.now + .seconds(30)
        while discovery.status().state != .unavailable && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(discovery.status().state == .unavailable)
        #expect(discovery.status().lastError == "avahi-daemon not running (Daemon not running)")
        #expect(discovery.status().peersSeen == 0)
        running.cancel()
        await running.value
        var events = 0
        for await _ in discovery.events { events += 1 }
        #expect(events == 0)
    }
}
