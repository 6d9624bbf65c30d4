import ContinuumCore
import ContinuumStore
import ContinuumTestSupport
import Foundation
import Testing

@Suite("Accounts in the store: founded once per node, devices derived per record, the same in every order")
struct AccountStoreTests {
    let laptop = try! NodeIdentity(seed: [UInt8](repeating: 11, count: 32))
    let desktop = try! NodeIdentity(seed: [UInt8](repeating: 12, count: 32))

    /// The laptop founds the account and adds the desktop (with its consent); the desktop writes its joining record,
    /// then removes the laptop, keeping the laptop's account log up to its add.
    struct Scene {
        let founding: VerifiedRecord
        let add: VerifiedRecord
        let joining: VerifiedRecord
        let removal: VerifiedRecord
        var account: AccountID { AccountID(founding: founding.id) }
        var all: [VerifiedRecord] { [founding, add, joining, removal] }

        init(laptop: NodeIdentity, desktop: NodeIdentity) throws {
            var logs = LogSigner()
            founding = try logs.sign(AccountRecord.founding(recovery: nil).body, by: laptop)
            let account = AccountID(founding: founding.id)
            add = try logs.sign(try desktop.added(to: account), by: laptop)
            joining = try logs.sign(AccountRecord.joining(account).body, by: desktop)
            removal = try logs.sign(
                AccountRecord.deviceRemove(
                    account: account,
                    device: laptop.author,
                    frontier: [FrontierEntry(log: laptop.author, through: 2, head: add.id)]
                ).body,
                by: desktop
            )
        }
    }

    @Test("a node founds its account once: one record in its key's log, itself the only device")
    func foundsOnce() async throws {
        let temporary = try TemporaryStore()
        let (account, founded) = try #require(try await temporary.store.foundAccount(by: laptop, recovery: nil))
        #expect(founded)
        let again = try #require(try await temporary.store.foundAccount(by: laptop, recovery: desktop.author))
        #expect(again.account == account && !again.founded)
        #expect(try await temporary.store.clock().heads[laptop.author] == 1)
        let held = try #require(try await temporary.store.account(of: laptop.author))
        #expect(held.account == account)
        #expect(held.founder == laptop.author)
        #expect(held.devices == [laptop.author])
        #expect(!held.hasRecovery)
        #expect(try await temporary.store.account(of: desktop.author) == nil)
    }

    @Test("a key that signed a profile before accounts existed founds none: its log cannot begin with one")
    func keyUsedBefore() async throws {
        let temporary = try TemporaryStore()
        _ = try await temporary.store.append(.profile(name: "Old"), by: desktop)
        #expect(try await temporary.store.foundAccount(by: desktop, recovery: nil) == nil)
        #expect(try await temporary.store.clock().heads[desktop.author] == 1, "nothing signed")
        #expect(try await temporary.store.account(of: desktop.author) == nil)
    }

    @Test("in all 24 orders, one record at a time: the desktop is the account's device, the laptop removed")
    func everyOrder() async throws {
        let scene = try Scene(laptop: laptop, desktop: desktop)
        for order in CommentsGoWithPostTests.permutations(scene.all) {
            let temporary = try TemporaryStore()
            for record in order { _ = try await temporary.store.ingest([record]) }
            let held = try #require(try await temporary.store.account(of: desktop.author))
            #expect(held.account == scene.account)
            #expect(held.devices == [desktop.author], "order: \(order.map(\.header.sequence))")
            #expect(try await temporary.store.account(of: laptop.author) == nil, "the laptop was removed")
        }
    }

    @Test("in one batch, or before the removal: the same as one at a time")
    func batches() async throws {
        let scene = try Scene(laptop: laptop, desktop: desktop)
        let whole = try TemporaryStore()
        _ = try await whole.store.ingest(scene.all.reversed())
        #expect(try await whole.store.account(of: desktop.author)?.devices == [desktop.author])
        let before = try TemporaryStore()
        _ = try await before.store.ingest([scene.add, scene.founding])
        let both = [laptop.author, desktop.author].sorted()
        #expect(try await before.store.account(of: laptop.author)?.devices == both)
        #expect(try await before.store.account(of: desktop.author)?.devices == both)
        _ = try await before.store.ingest([scene.removal])
        #expect(try await before.store.account(of: laptop.author) == nil)
    }
}
