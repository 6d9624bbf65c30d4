import ContinuumCore
import ContinuumTestSupport
import Foundation
import Testing

@Suite("Account records (kinds 8 … 10): laid out in data, a consent by the added device, inert when broken")
struct AccountRecordTests {
    let laptop = try! NodeIdentity(seed: [UInt8](repeating: 1, count: 32))
    let desktop = try! NodeIdentity(seed: [UInt8](repeating: 2, count: 32))
    let thief = try! NodeIdentity(seed: [UInt8](repeating: 3, count: 32))
    let account = AccountID(unchecked: Data(repeating: 0xAC, count: 32))
    let log = AuthorID(unchecked: Data(repeating: 0x10, count: 32))
    let later = AuthorID(unchecked: Data(repeating: 0x20, count: 32))
    let head = RecordID(unchecked: Data(repeating: 0xEE, count: 32))

    func signed(_ body: RecordBody, by identity: NodeIdentity) throws -> VerifiedRecord {
        let record = try identity.sign(
            RecordContent(
                author: identity.author,
                sequence: 1,
                previous: nil,
                createdAt: Timestamp(milliseconds: 1_700_000_000_000),
                body: body
            )
        )
        return try SignedRecord(bytes: record.bytes).verify()
    }

    /// The body of kind `code` with these `data` bytes.
    func raw(_ code: UInt8, _ data: Data) -> RecordBody {
        .opaque(OpaqueReferences(code: code, context: nil, data: Array(data)), payload: [])
    }

    @Test("each record signed, sent and read back is the same record; a device-add is 316 bytes at sequence 1")
    func roundTrip() throws {
        let consent = try desktop.consent(toJoin: account)
        let records: [AccountRecord] = [
            .founding(recovery: thief.author),
            .founding(recovery: nil),
            .joining(account),
            .deviceAdd(account: account, device: desktop.author, consent: consent),
            .deviceRemove(
                account: account,
                device: desktop.author,
                frontier: [
                    FrontierEntry(log: log, through: 3, head: head), FrontierEntry(log: later, through: 0, head: nil),
                ]
            ),
        ]
        for record in records {
            let read = try signed(record.body, by: laptop)
            #expect(read.body.flatMap { AccountRecord($0, author: laptop.author) } == record, "\(record)")
        }
        let add = try signed(records[3].body, by: laptop)
        // 54 + 32 (no context) + 2 + 128 + 4 + 32 + 64, and no content.
        #expect(add.bytes.count == 316 && add.bytes[5] == 9)
        #expect(Array(add.bytes[86..<88]) == [0, 128])
        #expect(Data(add.bytes[88..<120]) == account.bytes && Data(add.bytes[120..<152]) == desktop.author.bytes)
        let founding = try signed(records[0].body, by: laptop)
        #expect(AccountRecord.founding(recovery: nil).account(foundedBy: founding.id).bytes == founding.id.bytes)
    }

    @Test("a device-add without the device's consent, or with one for another account, or of its author: inert")
    func consent() throws {
        let good = try desktop.consent(toJoin: account)
        let byThief = try thief.consent(toJoin: account)
        let elsewhere = try desktop.consent(toJoin: AccountID(unchecked: Data(repeating: 0xBD, count: 32)))
        let add = { (device: AuthorID, consent: Data) in
            AccountRecord.deviceAdd(account: self.account, device: device, consent: consent).body
        }
        #expect(AccountRecord(add(desktop.author, good), author: laptop.author) != nil)
        #expect(AccountRecord(add(desktop.author, byThief), author: laptop.author) == nil)
        #expect(AccountRecord(add(desktop.author, elsewhere), author: laptop.author) == nil)
        #expect(AccountRecord(add(desktop.author, Data(count: 64)), author: laptop.author) == nil)
        #expect(AccountRecord(add(desktop.author, good), author: desktop.author) == nil)
        // Still a valid record: kept and passed on, never a device added.
        let inert = try signed(add(desktop.author, byThief), by: laptop)
        #expect(inert.header.kindCode == 9)
    }

    @Test("broken layouts are inert: flags, lengths, an unordered frontier, a head without a sequence, a context")
    func inertLayouts() throws {
        let zeros = Data(count: 32)
        let entry = { (log: AuthorID, through: UInt64, head: Data) -> Data in
            var big = through.bigEndian
            return log.bytes + Data(bytes: &big, count: 8) + head
        }
        let removal = { (entries: [Data]) -> RecordBody in
            self.raw(10, self.account.bytes + self.desktop.author.bytes + [UInt8(entries.count)] + entries.joined())
        }
        let broken: [(String, RecordBody)] = [
            ("founding with flag 1 and no key", raw(8, zeros + [1])),
            ("founding with a flag not defined", raw(8, zeros + [2])),
            ("joining with a recovery key", raw(8, account.bytes + [1] + thief.author.bytes)),
            ("account record of 34 bytes", raw(8, zeros + [0, 0])),
            ("add of 127 bytes", raw(9, Data(count: 127))),
            (
                "removal with a frontier out of order",
                removal([entry(later, 1, head.bytes), entry(log, 1, head.bytes)])
            ),
            ("removal keeping nothing with a head", removal([entry(log, 0, head.bytes)])),
            ("removal keeping 2 without a head", removal([entry(log, 2, zeros)])),
            ("removal one byte short", raw(10, account.bytes + desktop.author.bytes + [1] + Data(count: 71))),
            ("removal of no account", raw(10, zeros + desktop.author.bytes + [0])),
            (
                "account record with a context",
                .opaque(
                    OpaqueReferences(code: 8, context: PostID(unchecked: head.bytes), data: Array(zeros + [0])),
                    payload: []
                )
            ),
        ]
        for (name, body) in broken {
            #expect(AccountRecord(body, author: laptop.author) == nil, "\(name)")
            #expect(throws: Never.self, "\(name) is still a valid record") { try signed(body, by: laptop) }
        }
        // The control: the same removal, in order, is read.
        #expect(
            AccountRecord(removal([entry(log, 1, head.bytes), entry(later, 1, head.bytes)]), author: laptop.author)
                != nil
        )
    }
}

@Suite("An account's state from its signed records: laptop, desktop, a thief, a recovery key")
struct AccountStateFromRecordsTests {
    let laptop = try! NodeIdentity(seed: [UInt8](repeating: 1, count: 32))
    let desktop = try! NodeIdentity(seed: [UInt8](repeating: 2, count: 32))
    let thief = try! NodeIdentity(seed: [UInt8](repeating: 3, count: 32))
    let recovery = try! NodeIdentity(seed: [UInt8](repeating: 4, count: 32))

    @Test("founded on the laptop, the desktop added with its consent: both devices; a thief's add without it: none")
    func linked() throws {
        var logs = LogSigner()
        let founding = try logs.sign(AccountRecord.founding(recovery: recovery.author).body, by: laptop)
        let account = AccountID(founding: founding.id)
        let joining = try logs.sign(AccountRecord.joining(account).body, by: desktop)
        let add = try logs.sign(try desktop.added(to: account), by: laptop)
        // The thief signs an add of its own key with a consent it made for another account: inert.
        let forged = try logs.sign(
            AccountRecord.deviceAdd(
                account: account,
                device: thief.author,
                consent: try thief.consent(toJoin: AccountID(unchecked: Data(repeating: 9, count: 32)))
            ).body,
            by: laptop
        )
        for order in [[founding, joining, add, forged], [forged, add, joining, founding]] {
            let state = try #require(AccountRules.state(of: account, from: order))
            #expect(state.devices == [laptop.author, desktop.author])
            #expect(state.removed.isEmpty)
        }
        #expect(AccountRules.state(of: account, from: [joining, add]) == nil, "not founded: no state")
    }

    @Test("the desktop removes the laptop: the laptop's records beyond the frontier, later or back-dated, do not count")
    func removed() throws {
        var logs = LogSigner()
        let founding = try logs.sign(AccountRecord.founding(recovery: nil).body, by: laptop)
        let account = AccountID(founding: founding.id)
        let add = try logs.sign(try desktop.added(to: account), by: laptop)
        // The laptop's log in a group: a post the desktop held, then one after the removal.
        var groupLog = LogSigner()
        let group = try NodeIdentity(seed: [UInt8](repeating: 5, count: 32))
        let first = try groupLog.sign(.profile(name: "Alice"), by: group)
        let kept = try groupLog.sign(.profile(name: "Alice L."), by: group)
        let removal = try logs.sign(
            AccountRecord.deviceRemove(
                account: account,
                device: laptop.author,
                // Its account log up to its add of the desktop (the desktop's own path), and its group log.
                frontier: [
                    FrontierEntry(log: laptop.author, through: 2, head: add.id),
                    FrontierEntry(log: group.author, through: 2, head: kept.id),
                ].sorted { $0.log < $1.log }
            ).body,
            by: desktop
        )
        let later = try groupLog.sign(.profile(name: "the thief"), by: group)
        var fork = LogSigner(continuing: [first])
        let backDated = try fork.sign(.profile(name: "back-dated"), by: group)
        let state = try #require(AccountRules.state(of: account, from: [removal, add, founding]))
        #expect(state.devices == [desktop.author])
        #expect(state.removed == [laptop.author])
        let held = [first, kept, later, backDated]
        let previous = { (id: RecordID) in held.first { $0.id == id }?.header.previous }
        let counts = { (record: VerifiedRecord) in
            state.counts(
                device: laptop.author,
                log: group.author,
                sequence: record.header.sequence,
                id: record.id,
                previous: previous
            )
        }
        #expect(counts(first) && counts(kept))
        #expect(!counts(later), "after the frontier")
        #expect(!counts(backDated), "a fork at a sequence the frontier keeps: not on the head's chain")
        // A frontier that keeps nothing of the laptop's account log cuts the desktop's own add: it does not count.
        let selfCutting = try logs.sign(
            AccountRecord.deviceRemove(account: account, device: laptop.author, frontier: []).body,
            by: desktop
        )
        let alone = try #require(AccountRules.state(of: account, from: [selfCutting, add, founding]))
        #expect(alone.removed.isEmpty && alone.devices == [laptop.author, desktop.author])
    }
}
