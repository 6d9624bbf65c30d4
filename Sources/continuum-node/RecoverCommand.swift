import ArgumentParser
import ContinuumCore
import ContinuumNode
import ContinuumStore
import ContinuumSync
import Foundation
import Logging
import ServiceLifecycle

struct RecoverCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "recover",
        abstract: "Recover your account on this new device with its recovery code, and remove devices you lost.",
        discussion: """
            The 12 words 'init' printed are the account's recovery key, which ranks above every device. On a new data \
            directory, 'recover' dials a node that holds your account (any node of your groups: --peer), has the \
            recovery key add this device, syncs your groups, then has the key remove each --remove device. A device \
            removed so loses the removals it signed: the devices it removed are devices again. The words are read \
            from the arguments or, when none are given, from standard input; they are never stored.
            """
    )

    @OptionGroup var options: DataOptions
    @OptionGroup var output: OutputOptions

    @Argument(help: ArgumentHelp("The recovery code's 12 words (else read from standard input).", valueName: "WORD"))
    var words: [String] = []

    @Option(help: ArgumentHelp("A node that holds your account: one of your groups' nodes.", valueName: "HOST:PORT"))
    var peer: String

    @Option(
        help: ArgumentHelp(
            "A device to remove (its id or a unique prefix, as 'device list' on another device shows); repeatable.",
            valueName: "ID"
        )
    )
    var remove: [String] = []

    @Option(help: "The display name this device shows (default: the account's, once its groups are synced).")
    var name: String?

    func validate() throws {
        guard PeerAddress(peer) != nil else {
            throw ValidationError("--peer must be HOST:PORT, such as 192.168.1.20:7420")
        }
        if let name, TextRules.isBlank(name) { throw ValidationError("--name is blank; give a display name") }
    }

    struct Result: Encodable {
        let id: AuthorID
        @Nullable var account: AccountID?
        let removed: [AuthorID]
        @Nullable var name: String?
        let groups: Int
        let dataDirectory: String
    }

    func run() async throws {
        let code = try recoveryCode()
        let context = try options.open()
        let (identity, _) = try IdentityFile.loadOrCreate(at: context.directory.identityURL)
        guard try await context.store.canBeLinked(identity) else {
            throw CLIError(
                "this device has an account already (its key signed records): recover on a new data directory "
                    + "(--data DIR)"
            )
        }
        try context.store.close()
        let run = RecoverRun(address: PeerAddress(peer)!, name: name, remove: remove)
        let result = try await run.run(context.directory, identity: identity, key: code.key)
        if output.json { return try Output.json(result) }
        print("Recovered: this device (\(identity.author.short)) is a device of account \(result.account?.hex ?? "?").")
        for device in result.removed {
            print("removed device \(device.short): what it signs from now on counts nowhere")
        }
        print("name:    \(result.name ?? "(none)")")
        print("groups:  \(result.groups)")
        print("data:    \(context.directory.path)")
        print("Start it with 'continuum-node run': it carries the recovery to the nodes of your groups.")
    }

    /// The words given, or a line read from standard input.
    private func recoveryCode() throws -> RecoveryCode {
        let text = words.isEmpty ? (readLine() ?? "") : words.joined(separator: " ")
        do {
            return try RecoveryCode(words: text)
        } catch {
            throw CLIError("\(error)")
        }
    }
}

/// `recover`: a node runs here for the recovery's length. It dials the peer, has the recovery key add this device,
/// stays for the first round of history, then has the key remove the devices asked, and stops.
struct RecoverRun {
    let address: PeerAddress
    let name: String?
    let remove: [String]

    func run(
        _ directory: DataDirectory,
        identity: NodeIdentity,
        key: NodeIdentity
    ) async throws
        -> RecoverCommand.Result
    {
        let device = try await NewDeviceNode.start(directory, name: name)
        do {
            let result = try await recover(device.node, identity: identity, key: key, directory: directory)
            await device.stop()
            return result
        } catch {
            await device.stop()
            throw CLIError("\(error)")
        }
    }

    private func recover(
        _ node: Node,
        identity: NodeIdentity,
        key: NodeIdentity,
        directory: DataDirectory
    )
        async throws -> RecoverCommand.Result
    {
        let events = await node.engine.events()
        try await node.recover(with: key, at: address, name: name)
        await NewDeviceNode.firstRound(events)
        let store = node.store
        let devices = try await store.devices(of: identity)
        let chosen = try remove.map { prefix in
            do {
                return try devices.device(named: prefix).id
            } catch {
                throw CLIError("\(error)")
            }
        }
        if !chosen.isEmpty { _ = try await node.remove(chosen, withRecovery: key) }
        // After the removals: the logs of a device the thief removed show the account's name again.
        if name == nil { _ = try await node.takeAccountName() }
        return RecoverCommand.Result(
            id: identity.author,
            account: try await store.account(of: identity.author)?.account,
            removed: chosen,
            name: try await store.displayName(of: identity.author),
            groups: try await store.groups().count,
            dataDirectory: directory.path
        )
    }
}
