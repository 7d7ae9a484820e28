/**
 * uPlot (https://github.com/leeoniya/uPlot), served from the dashboard's own origin: the build copies the package's ES
 * module to `dist/dashboard/vendor/uplot.js` (scripts/copy-dashboard.js). This declaration gives that file the
 * package's own types.
 */
import uPlot from 'uplot';
export default uPlot;
