/** Public surface of weft's CDK constructs, for use in your own CDK app. */

/** The functions' environment variables: names, schemas, defaults, and the prop or resource that sets each. */
export { PLATFORM_VARIABLES, SETTINGS as WEFT_SETTINGS } from "../../shared/config/settings.js";
export { WeftAlarms } from "./alarms.js";
export { WEFT_API_ROUTES, type WeftApiAuthorization, WeftHttpApi } from "./api.js";
export { WEFT_FUNCTION_KINDS, WeftFunction, type WeftFunctionKind } from "./functions.js";
export {
  TASK_MAX_RECEIVE_COUNT,
  VISIBILITY_TO_TIMEOUT_RATIO,
  WeftOrchestrator,
  type WeftOrchestratorProps,
} from "./weft-orchestrator.js";
export { WeftStack, type WeftStackProps } from "./weft-stack.js";
