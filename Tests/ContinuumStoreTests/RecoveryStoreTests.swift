import ContinuumCore
import ContinuumStore
import ContinuumTestSupport
import Foundation
import Testing

/// Recovering an account through the store's ports (PROTOCOL.md §7.8.20): the new device's side, the answering
/// node's side, its refusals (nothing stored), and the recovery key's removals that undo a thief's.
@Suite("Recovery in the store: the new device's records, the answering node's checks, the key's removals")
struct RecoveryStoreTests {
    let laptop = try! NodeIdentity(seed: [UInt8](repeating: 41, count: 32))
    let desktop = try! NodeIdentity(seed: [UInt8](repeating: 42, count: 32))
    let phone = try! NodeIdentity(seed: [UInt8](repeating: 43, count: 32))
    let mallory = try! NodeIdentity(seed: [UInt8](repeating: 44, count: 32))
    let recovery = RecoveryCode(entropy: Data((0xe0...0xef).map { UInt8($0) })).key

    /// Alice's laptop founds her account (with the recovery key) and Family; the desktop is added and declares its
    /// log; then the desktop (stolen) removes the laptop.
    func scene() throws -> (records: [VerifiedRecord], account: AccountID, group: GroupID) {
        var logs = LogSigner()
        let founding = try logs.sign(AccountRecord.founding(recovery: recovery.author).body, by: laptop)
        let account = AccountID(founding: founding.id)
        let laptopLog = laptop.logKey(salt: Data("family".utf8))
        let group = GroupID(founder: laptopLog.author)
        _ = try logs.sign(.group(GroupFounding(node: laptop.node, name: "Family", open: false)), by: laptopLog)
        _ = try logs.sign(.profile(name: "alice"), by: laptopLog)
        _ = try logs.sign(try laptopLog.declared(in: group, for: account, by: laptop), by: laptop)
        let add = try logs.sign(try desktop.added(to: account), by: laptop)
        _ = try logs.sign(AccountRecord.joining(account).body, by: desktop)
        let desktopLog = desktop.logKey(salt: Data("family".utf8))
        _ = try logs.sign(try desktopLog.declared(in: group, for: account, by: desktop), by: desktop)
        // The thief's removal keeps the laptop's account log up to the desktop's add (else it would cut its own add).
        let frontier = [FrontierEntry(log: laptop.author, through: add.header.sequence, head: add.id)]
        _ = try logs.sign(
            AccountRecord.deviceRemove(account: account, device: laptop.author, frontier: frontier).body,
            by: desktop
        )
        return (logs.records, account, group)
    }

    /// Bob's node: it holds the scene, and answers recoveries.
    func answering(_ records: [VerifiedRecord]) async throws -> TemporaryStore {
        let bob = try TemporaryStore()
        _ = try await bob.store.ingest(records)
        return bob
    }

    @Test("the phone recovers through bob's node, removes the desktop, and the laptop is a device again on both")
    func recoverAndUndo() async throws {
        let (records, account, group) = try scene()
        let bob = try await answering(records)
        #expect(try await bob.store.account(of: laptop.author) == nil, "the thief removed the laptop")
        let sent = try await bob.store.recoveryRecords(key: recovery.author)
        let phoneStore = try TemporaryStore()
        let recovered = try await phoneStore.store.recordRecovery(
            records: sent,
            recovery: recovery,
            name: nil,
            by: phone
        )
        #expect(recovered.groups == [group])
        try await bob.store.takeRecovery(recovered.records, key: recovery.author, device: phone.author)
        #expect(
            Set(try #require(try await bob.store.account(of: phone.author)).devices) == [desktop.author, phone.author]
        )
        let removals = try await phoneStore.store.removeDevices([desktop.author], withRecovery: recovery, by: phone)
        #expect(removals.count == 1)
        let mine = try #require(try await phoneStore.store.account(of: phone.author))
        #expect(mine.account == account)
        #expect(Set(mine.devices) == [laptop.author, phone.author], "the desktop removed, its removal undone")
        // Bob's node gets the removal as any record, and agrees.
        let signed = try await phoneStore.store.records(after: 0).map { try SignedRecord(bytes: $0.bytes).verify() }
        _ = try await bob.store.ingest(signed.filter { $0.header.author == recovery.author })
        #expect(
            Set(try #require(try await bob.store.account(of: phone.author)).devices) == [laptop.author, phone.author]
        )
    }

    @Test(
        "bob's node refuses a RECOVERY with another key's record, or one that adds nobody, and stores none of it"
    )
    func refused() async throws {
        let (records, _, _) = try scene()
        let bob = try await answering(records)
        let phoneStore = try TemporaryStore()
        let recovered = try await phoneStore.store.recordRecovery(
            records: try await bob.store.recoveryRecords(key: recovery.author),
            recovery: recovery,
            name: "alice",
            by: phone
        )
        let before = try await bob.store.allRecordBytes()
        // Mallory's record slipped into the RECOVERY.
        var foreign = LogSigner()
        let stray = try foreign.sign(.profile(name: "mallory"), by: mallory)
        await #expect(throws: StoreError.self) {
            try await bob.store.takeRecovery(
                recovered.records + [stray.bytes],
                key: recovery.author,
                device: phone.author
            )
        }
        // Without the add: the phone is no device.
        await #expect(throws: StoreError.self) {
            try await bob.store.takeRecovery(
                Array(recovered.records.dropFirst(2)),
                key: recovery.author,
                device: phone.author
            )
        }
        // Another key than the account's recovery key.
        await #expect(throws: StoreError.self) {
            try await bob.store.takeRecovery(recovered.records, key: mallory.author, device: phone.author)
        }
        #expect(try await bob.store.allRecordBytes() == before, "the store is unchanged")
        await #expect(throws: StoreError.self) { try await bob.store.recoveryRecords(key: mallory.author) }
    }
}
