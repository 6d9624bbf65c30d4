import ArgumentParser
import ContinuumCore
import ContinuumNode
import ContinuumStore
import Foundation

struct DeviceCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "device",
        abstract: "The devices of your account: each machine of yours is one, with its own key.",
        subcommands: [DeviceListCommand.self],
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
