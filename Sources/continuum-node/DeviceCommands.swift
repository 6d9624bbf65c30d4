import ArgumentParser
import ContinuumCore
import ContinuumNode
import ContinuumStore
import Foundation
import Logging
import ServiceLifecycle

struct DeviceCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "device",
        abstract: "The devices of your account: each machine of yours is one, with its own key.",
        subcommands: [DeviceListCommand.self, DeviceLinkCommand.self, DeviceRemoveCommand.self],
        defaultSubcommand: DeviceListCommand.self
    )
}

struct DeviceListCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list",
        abstract: "Show the devices of this node's account, as this node knows them."
    )

    @OptionGroup var options: DataOptions
    @OptionGroup var output: OutputOptions

    func run() async throws {
        let context = try options.open()
        let list = try await context.store.devices(of: try context.identity())
        if output.json { return try Output.json(DeviceListJSON(list)) }
        guard let account = list.account else {
            print("This node has no account: its key signed records before accounts existed.")
            return
        }
        let recovery = list.hasRecovery ? "a recovery code" : "no recovery code"
        print("account \(account.hex) (\(plural(list.devices.count, "device")), \(recovery))")
        for device in list.devices {
            var notes: [String] = []
            if device.thisDevice { notes.append("this device") }
            if device.founder { notes.append("founded the account") }
            if let seen = device.lastSeen { notes.append("last seen \(seen.rfc3339)") }
            print("  \(device.id.short)  \(device.name ?? "(no name)")  \(notes.joined(separator: ", "))")
        }
    }
}

struct DeviceLinkCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "link",
        abstract: "Make a one-time code that links a new device into this node's account.",
        discussion: """
            On the new machine, run 'continuum-node init --link CODE' while this node runs: the new device joins \
            your account, with its own key, and gets your name, your groups and their history. The code names this \
            node, where it listens and a secret; it works once, for 10 minutes by default.
            """
    )

    @OptionGroup var options: DataOptions
    @OptionGroup var output: OutputOptions

    @Option(help: "Minutes until the code expires.")
    var expires = 10

    @OptionGroup var address: CodeAddressOptions

    func validate() throws {
        guard (1...1_440).contains(expires) else { throw ValidationError("--expires must be 1 to 1440 minutes") }
    }

    func run() async throws {
        let context = try options.open()
        let identity = try context.identity()
        guard let account = try await context.store.account(of: identity.author)?.account else {
            throw CLIError(
                "this node has no account to link a device into: its key signed records before accounts existed"
            )
        }
        let ticket = try await context.store.newLinkTicket(lifetime: .seconds(expires * 60), by: identity)
        let (host, port) = address.resolved(context.directory)
        let code = ticket.code(of: identity, host: host, port: port)
        if output.json {
            return try Output.json(DeviceLinkJSON(code: code, account: account, expiresAt: ticket.expiresAt))
        }
        print(code.text)
        // On stderr, as `invite` does: the code alone is what a script captures.
        if isatty(STDERR_FILENO) == 1, let qr = try? QRCode(encoding: code.text) {
            FileHandle.standardError.write(Data((qr.terminalText() + "\n").utf8))
        }
        FileHandle.standardError.write(
            Data(
                ("links one new device into account \(account.short), until \(ticket.expiresAt.rfc3339); on the new "
                    + "machine: continuum-node init --link \(code.text)\n").utf8
            )
        )
    }
}

struct DeviceRemoveCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "remove",
        abstract: "Remove a device from this node's account: a lost or stolen one, or one you no longer use.",
        discussion: """
            Every node of your groups then refuses what the device signs from now on, and anything it signs claiming             to be from before; what it posted up to now stays, as yours. Sync with the device first if you can:             the removal keeps what this node holds of its logs.
            """
    )

    @OptionGroup var options: DataOptions
    @OptionGroup var output: OutputOptions

    @Argument(help: ArgumentHelp("The device: its id or a unique prefix of it ('device list').", valueName: "ID"))
    var device: String

    struct Result: Encodable {
        let device: AuthorID
        let record: RecordID
        let logs: Int
        let kept: UInt64
    }

    func run() async throws {
        let context = try options.open()
        let identity = try context.identity()
        let list = try await context.store.devices(of: identity)
        let chosen: DeviceSummary
        do {
            chosen = try list.device(named: device)
        } catch {
            throw CLIError(error.ambiguous ? error.description : "\(error) (see 'continuum-node device list')")
        }
        let removal: DeviceRemoval
        do {
            removal = try await context.actions().removeDevice(chosen.id, by: identity)
        } catch let error as StoreError {
            throw CLIError(error.message)
        }
        if output.json {
            return try Output.json(
                Result(device: chosen.id, record: removal.record, logs: removal.logs, kept: removal.kept)
            )
        }
        print(
            "removed device \(chosen.id.short) (\(chosen.name ?? "no name")): \(removal.kept) of its records in "
                + "\(removal.logs) logs stay; anything else it signs counts nowhere"
        )
    }
}

/// `init --link CODE`: this new device joins the account of the device that made the code. A node runs here for the
/// link's length: it dials that device, links, and stays for the first round of history, then stops.
struct LinkRun {
    let code: String
    let name: String?
    let json: Bool

    struct Result: Encodable {
        let id: AuthorID
        let account: AccountID?
        @Nullable var name: String?
        let groups: Int
        let dataDirectory: String
    }

    func run(_ context: CommandContext, _ identity: NodeIdentity) async throws {
        let parsed: InviteCode
        do {
            parsed = try InviteCode(parsing: code)
        } catch {
            throw CLIError(
                "'\(code)' is not a link code (it may be mistyped: a code is 31 or 40 characters, from "
                    + "'continuum-node device link')"
            )
        }
        guard parsed.isLink else {
            throw CLIError("this is an invite to a group, not a link code: run 'continuum-node join \(code)'")
        }
        guard try await context.store.canBeLinked(identity) else {
            throw CLIError(
                "this device has an account already (its key signed records): link a new data directory "
                    + "(--data DIR), or remove \(context.directory.path) first"
            )
        }
        if let name { try await context.store.setOwnName(name, of: identity) }
        try context.store.close()
        let device = try await NewDeviceNode.start(context.directory, name: name)
        let node = device.node
        do {
            try await linkAndSync(node, code: parsed)
        } catch {
            await device.stop()
            throw CLIError("\(error)")
        }
        let store = node.store
        let account = try await store.account(of: identity.author)?.account
        let groups = try await store.groups().count
        let shown = try await store.displayName(of: identity.author)
        await device.stop()
        let result = Result(
            id: identity.author,
            account: account,
            name: shown,
            groups: groups,
            dataDirectory: context.directory.path
        )
        if json { return try Output.json(result) }
        print("Linked: this device (\(identity.author.short)) is now a device of account \(account?.hex ?? "?").")
        print("name:    \(shown ?? "(none)")")
        print("groups:  \(groups)")
        print("data:    \(context.directory.path)")
        print("Start it with 'continuum-node run': it keeps your groups in step with your other devices.")
    }

    /// Links, then waits (at most 60 s) for the first round of history from the device that made the code.
    private func linkAndSync(_ node: Node, code: InviteCode) async throws {
        let events = await node.engine.events()
        try await node.link(code)
        let prefix = code.nodePrefix
        await NewDeviceNode.firstRound(events) { $0.bytes.starts(with: prefix) }
    }
}

/// Where a new node dials the one that made a code (`invite`, `device link`): `--host` and `--port`.
struct CodeAddressOptions: ParsableArguments {
    @Option(
        help: ArgumentHelp(
            "The address the new node dials (default: this machine's first LAN IPv4 address).",
            valueName: "HOST"
        )
    )
    var host: String?

    @Option(help: "The sync port the new node dials (default: the running node's, else 7420).")
    var port: Int?

    func validate() throws {
        if let host,
            host.split(separator: ".").count != 4 || host.split(separator: ".").contains(where: { UInt8($0) == nil })
        {
            throw ValidationError(
                "--host must be an IPv4 address such as 192.168.1.20 (a code carries 4 bytes of address)"
            )
        }
        if let port, !(1...65535).contains(port) { throw ValidationError("--port must be 1 to 65535") }
    }

    /// The address and port the code carries.
    func resolved(_ directory: DataDirectory) -> (host: String, port: Int) {
        // No node running (or none that answers): the code carries `run`'s default port, as --port's help says.
        (host ?? LANAddress.first() ?? "127.0.0.1", port ?? ((try? ControlClient.listeningPort(directory)) ?? 7420))
    }
}
