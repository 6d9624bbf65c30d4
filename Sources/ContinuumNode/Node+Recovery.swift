import ContinuumCore
import ContinuumStore
import ContinuumSync

// Recovering an account with its recovery code (PROTOCOL.md §7.8.20).

extension Node {
    /// Recovers the account whose recovery key is `key` through the node at `address`, which holds the account: the
    /// key adds this node as a device, which joins the account's groups (taking `name`, when given).
    public func recover(with key: NodeIdentity, at address: PeerAddress, name: String?) async throws {
        let attempt = JoinAttempt(recovering: key, device: identity, name: name)
        _ = try await outcome(of: attempt, at: address, timeout: .seconds(20))
    }

    /// Takes the name the account's logs show, when this node has none: returns it, or nil.
    public func takeAccountName() async throws -> String? {
        guard try await store.displayName(of: identity.author) == nil,
            let name = try await store.accountName(of: identity)
        else { return nil }
        try await store.signName(name, by: identity)
        await engine.recordsWritten()
        return name
    }

    /// Has the recovery key remove `devices` from this node's account, undoing the removals they signed (see
    /// ``ContinuumStore/removeDevices(_:withRecovery:by:)``). The removals are sent to the connected peers at once
    /// (a round with each follows); every other node gets them as records travel, from any node that holds them.
    public func remove(_ devices: [AuthorID], withRecovery key: NodeIdentity) async throws -> [DeviceRemoval] {
        let removals = try await store.removeDevices(devices, withRecovery: key, by: identity)
        await engine.flushNewRecords()
        _ = await engine.syncNow(timeout: .seconds(20))
        return removals
    }
}
