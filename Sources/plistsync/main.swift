import Foundation
import PlistSyncCommands

exit(CLI.run(Array(CommandLine.arguments.dropFirst())))
