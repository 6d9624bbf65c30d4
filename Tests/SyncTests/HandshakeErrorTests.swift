import ContinuumCore
import ContinuumStore
import ContinuumWire
import Foundation
import Testing

/// Every refusal in the handshake is an ERROR with its code, then the close (PROTOCOL.md §7.4.2, §7.6), also for a
/// MEMBERSHIP or JOINED that the frame decoder refuses inside the node's pipeline. A raw plaintext peer sends the
/// bad frame; each case shows the ERROR, the EOF after it, that the node keeps serving and that its store is unchanged.
@Suite("Handshake: a refused MEMBERSHIP or JOINED gets its ERROR", .serialized)
struct HandshakeErrorTests {
    @Test(
        "a MEMBERSHIP the decoder refuses is answered with ERROR malformed frame, then EOF; the node keeps serving",
        arguments: [
            // Length 5: version 1, MEMBERSHIP, no claims, no network tags, join flag 3.
            ([0, 0, 0, 5, 1, 3, 0, 0, 5], "MEMBERSHIP: join flag is 5; it must be 0 ... 4"),
            // Length 3: version 1, MEMBERSHIP, 33 claims (refused from the count, before any claim is read).
            ([0, 0, 0, 3, 1, 3, 33], "MEMBERSHIP: 33 claims; the limit is 32"),
        ] as [([UInt8], String)]
    )
    func badMembership(frame: [UInt8], message: String) async throws {
        try await HostileTests.withTarget { target in
            let (client, _, _) = try await RawClient.hellos(port: target.node.port, identity: .generate())
            try client.send(frame)
            let error = try await client.expectRefusal(.malformedFrame)
            #expect(error?.message == message)
            #expect(
                client.received.map(\.typeName) == ["HELLO", "MEMBERSHIP", "ERROR"],
                "the node's HELLO and MEMBERSHIP, then the ERROR and nothing else"
            )
            try await target.expectLogged("handshake failed", and: message)
            try await target.expectUnchanged()
            // A second, honest connection is admitted to a session (the node's first CLOCK came).
            let honest = try await RawClient.handshake(port: target.node.port)
            #expect(honest.end == nil, "the honest connection is open")
            honest.close()
            try await target.expectStillServing()
        }
    }

    @Test("a JOINED the decoder refuses is answered with ERROR malformed frame by the joiner, which joins nothing")
    func badJoined() async throws {
        let node = try await TestNode("joiner", network: false)
        defer { node.remove() }
        let inviter = NodeIdentity.generate()
        let listener = try RawListener()
        // A long handshake timeout: on a loaded machine the test may take seconds to read the node's connection.
        try await node.start(extra: ["--insecure-plaintext", "--handshake-timeout-ms", "60000"])
        let before = try await Snapshot(node)
        let code = InviteCode(
            nodePrefix: Data(inviter.author.bytes.prefix(InviteCode.nodePrefixBytes)),
            secret: Data((0..<InviteCode.secretBytes).map { _ in UInt8.random(in: 0...255) }),
            host: "127.0.0.1",
            port: listener.port
        )
        let joining = node.cliInBackground("join", code.text)

        let client = try await listener.accept(timeout: .seconds(30))
        try client.send(.hello(RawClient.hello(for: inviter)))
        try await client.read(timeout: .seconds(30)) { messages in
            messages.contains { if case .membership = $0 { true } else { false } }
        }
        guard case .membership(let theirs)? = client.received.last else {
            throw ClientError("no MEMBERSHIP from the joiner: \(client.received.map(\.typeName))")
        }
        #expect(theirs.join != nil, "the joiner's MEMBERSHIP carries its join")
        try client.send(.membership(Membership()))
        // Length 36: version 1, JOINED, a group id, then a record length of 16385, over the limit of 16384.
        try client.send([0, 0, 0, 36, 1, 4] + [UInt8](repeating: 0x22, count: 32) + [0x40, 0x01])
        let error = try await client.expectRefusal(.malformedFrame)
        #expect(error?.message == "JOINED: record is 16385 bytes; the limit is 16384")

        let result = try await joining.value
        #expect(result.status != 0, "the join fails: \(result.stdout)")
        #expect(result.stderr.contains("JOINED: record is 16385 bytes"), "\(result.stderr)")
        // Nothing was joined or stored, and the node still answers.
        #expect(try await node.cli("group", "list").contains("belongs to no group"))
        let after = try await Snapshot(node)
        #expect(after.feed == before.feed)
        #expect(after.records == before.records, "\(before.records.count) records before, \(after.records.count) after")
        try await node.stop()
    }
}
