import ArgumentParser
import ContinuumNode
import Foundation
import Logging

/// `continuum-node`: a peer-to-peer photo-sharing node for the local network.
@main
struct ContinuumNodeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "continuum-node",
        abstract: "A peer-to-peer photo-sharing node for the local network.",
        discussion: """
            Share photos with the people around you, with no server: nodes on one local network find each other, \
            and share the posts, comments and photos of the groups they are in. Every node keeps its own copy in \
            SQLite and works offline.

            The data directory is --data, else $CONTINUUM_DATA, else $XDG_DATA_HOME/continuum-node, \
            else ~/.local/share/continuum-node.

            CLI.md (every command, its errors and its JSON), API.md, WEB.md and PROTOCOL.md say more: in \
            /usr/share/doc/continuum-node when installed from the package, in Docs/ of the source.
            """,
        version: NodeVersion.description,
        subcommands: [
            InitCommand.self, StatusCommand.self, PostCommand.self, CommentCommand.self, FeedCommand.self,
            SearchCommand.self, ShowCommand.self, EditCommand.self, DeleteCommand.self, ExportCommand.self,
            RunCommand.self, SyncCommand.self, FetchCommand.self, PeersCommand.self, FollowCommand.self,
            UnfollowCommand.self, FollowingCommand.self, NotificationsCommand.self, WatchCommand.self,
            GroupCommand.self, InviteCommand.self, JoinCommand.self, RequestsCommand.self, ApproveCommand.self,
            DenyCommand.self, RevokeCommand.self, BlockCommand.self, UnblockCommand.self, BlockedCommand.self,
            HideCommand.self, ReactCommand.self, UnreactCommand.self, DeviceCommand.self, RecoverCommand.self,
            GuestLinkCommand.self,
            GuestsCommand.self, GuestRemoveCommand.self,
        ]
    )

    /// Parses the command line once `--data` before the command is moved after it, and an unknown command is named
    /// (``CommandLineRepair``); then runs the command.
    static func main() async {
        let names = configuration.subcommands.compactMap { $0.configuration.commandName }
        switch CommandLineRepair.repair(Array(CommandLine.arguments.dropFirst()), commands: names) {
        case .run(let arguments):
            await main(arguments)
        case .unknown(let message):
            FileHandle.standardError.write(Data("Error: \(message)\n".utf8))
            Foundation.exit(64)
        }
    }
}
